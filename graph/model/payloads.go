package model

import "github.com/filemill/filemill/domain"

// CreateUploadPayload is the answer to createUpload: the session to PUT into, or with
// fromUrl the file, completed at once (Fetched).
type CreateUploadPayload struct {
	Upload  *domain.UploadView
	Fetched *domain.FileView
}
