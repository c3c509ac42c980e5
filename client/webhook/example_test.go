package webhook_test

import (
	"io"
	"log"
	"net/http"
	"os"

	"github.com/filemill/filemill/client/webhook"
)

// A receiver verifies each delivery before it trusts it, and answers 2xx quickly.
func ExampleVerify() {
	secrets := []string{os.Getenv("FILEMILL_WEBHOOK_SECRET")}
	http.HandleFunc("/filemill/webhook", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		ev, err := webhook.Verify(secrets, r.Header, body)
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		switch ev.Type {
		case "job.succeeded", "job.failed":
			job, err := ev.Job()
			if err != nil {
				http.Error(w, "bad event", http.StatusBadRequest)
				return
			}
			log.Printf("job %s is %s", job.Id, job.State)
		case "file.ready":
			file, _ := ev.File()
			log.Printf("file %s is ready", file.Id)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
