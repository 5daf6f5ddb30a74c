# want: 8 For linux/arm64, torch 2.6.0 publishes cpu, cu126 wheels
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "12.4"
  torch = "2.6.0"
  driver_floor = "550.54.14"
  platforms = ["linux/amd64", "linux/arm64"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
