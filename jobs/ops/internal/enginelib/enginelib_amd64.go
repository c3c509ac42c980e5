package enginelib

/*
#cgo LDFLAGS: -ldl
#include "enginelib.h"
*/
import "C"

import (
	"errors"
	"sync"
)

// Load loads the engines' libraries (libvips, tesseract and what they need) into the
// process, once; later calls return the first answer. An engine calls it before its
// first use of them.
var Load = sync.OnceValue(func() error {
	if err := C.fm_engine_load(); err != nil {
		return errors.New("engine libraries: " + C.GoString(err))
	}
	return nil
})
