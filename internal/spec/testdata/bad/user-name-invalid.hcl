# want: 7 is not a login name
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    user {
      name = "Jo Van"
      uid  = 1000
    }
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
