# want: 2 driver_floor is required
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "11.8"
  torch = "2.6.0"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
