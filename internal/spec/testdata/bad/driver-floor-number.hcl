# want: 7 driver_floor = 525 is a number
image "x" {
  base   = "nvidia/cuda:12.6.3-base-ubuntu22.04"
  python = "3.11"
  cuda   = "12.6"
  torch  = "2.6.0"
  driver_floor = 525
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
