# want: 6 is not one of "fail", "warn"
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    driver_policy = "explode"
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
