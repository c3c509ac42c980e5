// Package catalog is the list of what this deployment can do: the operations every
// engine package declares, and the presets, pipelines of those operations with fixed
// options. Every process builds the same registry from it, whatever engines it runs.
package catalog

import (
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/render"
)

// Operations are every engine package's declarations.
func Operations() [][]domain.OperationSpec {
	return [][]domain.OperationSpec{
		inspect.Specs(),
		pdf.Specs(),
		render.Specs(),
	}
}

// Presets are the presets of the contract.
func Presets() []domain.PresetSpec {
	return nil
}

// Registry returns the registry of every operation and preset.
func Registry() (*domain.Registry, error) {
	reg := domain.NewRegistry()
	for _, specs := range Operations() {
		if err := reg.AddOperations(specs...); err != nil {
			return nil, err
		}
	}
	for _, p := range Presets() {
		if err := reg.AddPreset(p); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
