# want: 10 is not an environment variable name
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    user {
      name = "jovyan"
      uid  = 1000
    }
    ssh { authorized_keys_env = "SSH-KEYS" }
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
