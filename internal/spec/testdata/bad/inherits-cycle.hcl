# want: 12 The images inherit in a loop: a -> b -> a
image "a" {
  inherits = ["b"]
  base     = "registry.example/base:1"
  python   = "3.11"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
image "b" {
  inherits = ["a"]
}
