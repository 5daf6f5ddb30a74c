# want: 6 swappiness must be between 0 and 200
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    swappiness = 300
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
