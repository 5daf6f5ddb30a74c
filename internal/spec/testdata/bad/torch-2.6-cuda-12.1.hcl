# want: 5 publishes no cu121 wheel
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "12.1"
  torch = "2.6.0"
  driver_floor = "525.60.13"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
