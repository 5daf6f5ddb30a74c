# want: 4 built for Python 3.9, 3.10, 3.11, 3.12, 3.13
image "x" {
  base   = "registry.example/base:1"
  python = "3.8"
  cuda = "11.8"
  torch = "2.6.0"
  driver_floor = "525.60.13"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
