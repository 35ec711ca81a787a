// Package codex is the Codex CLI adapter layer.
package codex
