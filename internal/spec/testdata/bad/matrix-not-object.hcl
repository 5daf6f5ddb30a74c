# want: 5 A matrix is an object of lists
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  matrix = ["3.10"]
  name = "x"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
