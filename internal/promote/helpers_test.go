package promote_test

import "imagectl/internal/lock"

func lockMarshal(l *lock.Lock) ([]byte, error) { return lock.Marshal(l) }
