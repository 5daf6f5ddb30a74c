package spec

import "fmt"

// Select returns the images named in names, in the order given; no names
// selects every image. An unknown name is an error listing the known ones.
func Select(imgs []Image, names []string) ([]Image, error) {
	if len(names) == 0 {
		return imgs, nil
	}
	var out []Image
	for _, n := range names {
		found := false
		for _, img := range imgs {
			if img.Name == n {
				out = append(out, img)
				found = true
				break
			}
		}
		if !found {
			known := make([]string, 0, len(imgs))
			for _, img := range imgs {
				known = append(known, img.Name)
			}
			return nil, fmt.Errorf("no image named %q in the specs (images: %v)", n, known)
		}
	}
	return out, nil
}
