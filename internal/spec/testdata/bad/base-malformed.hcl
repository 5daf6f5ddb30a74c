# want: 3 is not a valid image reference
image "x" {
  base   = "Registry.example/UPPER::bad"
  python = "3.11"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
