# want: 3 The images inherit in a loop: b -> a -> b
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
