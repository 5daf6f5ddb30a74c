# want: 5 Platform "linux/arm64" is listed twice
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  platforms = ["linux/arm64", "linux/amd64", "linux/arm64"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
