# want: 9 Image name "x-11.8" is already used
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  matrix = {
    cuda   = ["11.8"]
    python = ["3.10", "3.11"]
  }
  name = "x-${cuda}"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
