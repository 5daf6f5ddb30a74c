# want: 7 comes from the variant's PyTorch index
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  torch  = "2.6.0"
  torch_variant = "cpu"
  pip = ["torchvision @ https://example.org/torchvision-0.21.0-cp311-cp311-linux_x86_64.whl"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
