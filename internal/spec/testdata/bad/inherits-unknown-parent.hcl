# want: 3 has no image block labelled "bsae"
image "a" {
  inherits = ["bsae"]
}
image "base" {
  base   = "registry.example/base:1"
  python = "3.11"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
