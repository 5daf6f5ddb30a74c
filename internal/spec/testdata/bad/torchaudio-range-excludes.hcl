# want: 8 asks <2.6
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  torch  = "2.6.0"
  torch_variant = "cpu"
  pip = [
    "torchaudio<2.6",
  ]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
