# want: 8 driver_floor 450.80.02 is below 525.60.13
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "12.1"
  torch = "2.6.0"
  torch_variant = "cu124"
  driver_floor = "450.80.02"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
