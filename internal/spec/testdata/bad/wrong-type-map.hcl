# want: 5 env must be a map(string)
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  env = ["A=1"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
