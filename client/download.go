package client

import (
	"context"
	"io"
	"net/http"

	"github.com/filemill/filemill/client/api"
)

// Download writes a file's bytes (artifactID empty) or one of its artifacts to w,
// through a download URL minted for the call, and answers the bytes written. The
// request for the URL is authorized; the download itself carries no key.
func (c *Client) Download(ctx context.Context, fileID, artifactID string, w io.Writer) (int64, error) {
	req := api.DownloadUrlRequest{}
	if artifactID != "" {
		req.ArtifactId = &artifactID
	}
	u, err := c.CreateDownloadURL(ctx, fileID, req)
	if err != nil {
		return 0, err
	}
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, u.Url, nil)
	if err != nil {
		return 0, errorf("download: %w", err)
	}
	resp, err := c.doer.Do(get)
	if err != nil {
		return 0, errorf("download: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, newAPIError(resp)
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, errorf("download %s: %w", fileID, err)
	}
	return n, nil
}
