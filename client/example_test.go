package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
)

// These examples run against the deployment the package's tests start, named by
// FILEMILL_API_URL and FILEMILL_API_KEY as a program of yours would read them.

func newClient() *client.Client {
	c, err := client.New(os.Getenv("FILEMILL_API_URL"), os.Getenv("FILEMILL_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// exampleFile writes a small file to upload.
func exampleFile(name, content string) string {
	dir, err := os.MkdirTemp("", "filemill-example-")
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		log.Fatal(err)
	}
	return path
}

// Upload a file, run an operation on it, and wait for the outcome.
func Example() {
	ctx := context.Background()
	c := newClient()
	file, err := c.UploadFile(ctx, exampleFile("hello.txt", "hello, filemill"), client.UploadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	job, err := c.CreateJob(ctx, api.CreateJobRequest{FileId: file.Id, Operation: client.Ptr("inspect")})
	if err != nil {
		log.Fatal(err)
	}
	done, err := c.WaitJob(ctx, job.Id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(file.Status, file.DetectedFormat.Extension, done.State, done.Progress)
	// Output: ready txt succeeded 100
}

// A large file goes up in parts; with a state file, an upload that was interrupted
// resumes where it stopped when called again.
func ExampleClient_UploadFile() {
	ctx := context.Background()
	c := newClient()
	path := exampleFile("notes.txt", "a few words")
	file, err := c.UploadFile(ctx, path, client.UploadOptions{
		StateFile:  path + ".upload.json",
		Validation: &api.ValidationPolicy{Formats: &[]string{"txt", "pdf"}},
		Progress: func(p client.UploadProgress) {
			fmt.Printf("%d/%d bytes\n", p.Sent, p.Total)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(file.Filename, file.Status, *file.ByteSize)
	// Output:
	// 11/11 bytes
	// notes.txt ready 11
}

// WaitJob reports progress as it learns it.
func ExampleClient_WaitJob() {
	ctx := context.Background()
	c := newClient()
	file, err := c.UploadFile(ctx, exampleFile("a.txt", "wait"), client.UploadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	job, err := c.CreateJob(ctx, api.CreateJobRequest{FileId: file.Id, Operation: client.Ptr("inspect")})
	if err != nil {
		log.Fatal(err)
	}
	var last client.JobProgress
	done, err := c.WaitJob(ctx, job.Id, client.OnProgress(func(p client.JobProgress) { last = p }))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, last.State, last.Progress)
	// Output: succeeded succeeded 100
}

// The iterators follow next_cursor across pages; breaking out stops the paging.
func ExampleClient_Jobs() {
	ctx := context.Background()
	c := newClient()
	n := 0
	for job, err := range c.Jobs(ctx, &api.ListJobsParams{State: client.Ptr(api.JobStateSucceeded)}) {
		if err != nil {
			log.Fatal(err)
		}
		if job.State != api.JobStateSucceeded {
			log.Fatalf("%s is %s", job.Id, job.State)
		}
		n++
	}
	fmt.Println(n > 0)
	// Output: true
}

// Errors are *APIError, with the code, param and request id.
func ExampleAPIError() {
	_, err := newClient().GetJob(context.Background(), "job_01JD8X6Q2V9W3Z4Y5A6B7C8D9E")
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code, apiErr.RequestID != "")
	}
	// Output: 404 not_found true
}
