# want: 6 declares ssh but no user block
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    ssh {}
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
