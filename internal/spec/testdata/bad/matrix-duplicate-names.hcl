# want: 8 Image name "x" is already used
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  matrix = {
    python = ["3.10", "3.11"]
  }
  name = "x"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
