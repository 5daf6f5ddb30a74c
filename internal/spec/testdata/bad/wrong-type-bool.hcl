# want: 6 cpu_only must be a bool
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  verify {
    cpu_only = "maybe"
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
