# want: 9 pip entry "torch==2.5.1" names torch, which the image pins to 2.6.0
image "x" {
  base   = "nvidia/cuda:12.6.3-base-ubuntu22.04"
  python = "3.11"
  cuda   = "12.6"
  torch  = "2.6.0"
  driver_floor = "560.28.03"
  # the frozen core is torch, not pip
  pip    = ["numpy", "torch==2.5.1"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
