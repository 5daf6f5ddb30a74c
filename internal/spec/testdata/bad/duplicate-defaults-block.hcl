# want: 4 A file has at most one defaults block
defaults {
}
defaults {
}
