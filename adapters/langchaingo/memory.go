package memorlangchaingo

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/schema"

	"github.com/memor-db/memor"
)

// Memory is a LangChainGo conversation memory kept by memor: each human
// turn a chain saves is an episode of the user's log, and each load
// recalls what memor holds about the chain's input, as of now, as the
// fenced block of memor.Engine.Context (the fence makes memor strip it if
// it is ever fed back, so recalled memories are never learned twice). It
// is safe for concurrent use.
type Memory struct {
	engine    *memor.Engine
	user      string
	memoryKey string
	inputKey  string
	outputKey string
	assistant string
}

var _ schema.Memory = (*Memory)(nil)

// MemoryOption configures a [Memory].
type MemoryOption func(*Memory)

// WithMemoryKey names the prompt variable the block is loaded into
// (default "history", which LangChainGo's conversation prompt reads).
func WithMemoryKey(key string) MemoryOption { return func(m *Memory) { m.memoryKey = key } }

// WithInputKey names the chain input that is the human turn; by default
// the chain's only input.
func WithInputKey(key string) MemoryOption { return func(m *Memory) { m.inputKey = key } }

// WithOutputKey names the chain output that is the AI's reply; by default
// the chain's only output. It is read only with [WithAssistantSpeaker].
func WithOutputKey(key string) MemoryOption { return func(m *Memory) { m.outputKey = key } }

// WithAssistantSpeaker saves the AI's replies too, as episodes said by
// name: their first person is about name, never about the user. Without
// it only the human turns are remembered.
func WithAssistantSpeaker(name string) MemoryOption {
	return func(m *Memory) { m.assistant = name }
}

// NewMemory returns the conversation memory of user in e.
func NewMemory(e *memor.Engine, user string, opts ...MemoryOption) *Memory {
	m := &Memory{engine: e, user: user, memoryKey: "history"}
	for _, o := range opts {
		o(m)
	}
	return m
}

// GetMemoryKey returns the prompt variable the memory loads.
func (m *Memory) GetMemoryKey(context.Context) string { return m.memoryKey }

// MemoryVariables returns the one variable the memory loads.
func (m *Memory) MemoryVariables(context.Context) []string { return []string{m.memoryKey} }

// LoadMemoryVariables recalls what memor knows about the chain's input.
// An input that is missing or not a string is an error wrapping
// LangChainGo's memory.ErrInvalidInputValues.
func (m *Memory) LoadMemoryVariables(ctx context.Context, inputs map[string]any) (map[string]any, error) {
	if m.engine == nil {
		return nil, ErrNoEngine
	}
	q, err := memory.GetInputValue(inputs, m.inputKey)
	if err != nil {
		return nil, fmt.Errorf("memorlangchaingo: load: %w", err)
	}
	block, err := m.engine.Context(ctx, m.user, q)
	if err != nil {
		return nil, fmt.Errorf("memorlangchaingo: load: %w", err)
	}
	return map[string]any{m.memoryKey: block}, nil
}

// SaveContext adds the human turn to the user's log (and the AI's reply,
// with [WithAssistantSpeaker]) and waits until memor has applied it, so
// the next turn's load sees what this one said.
func (m *Memory) SaveContext(ctx context.Context, inputs, outputs map[string]any) error {
	if m.engine == nil {
		return ErrNoEngine
	}
	in, err := memory.GetInputValue(inputs, m.inputKey)
	if err != nil {
		return fmt.Errorf("memorlangchaingo: save: %w", err)
	}
	if _, err := m.engine.Add(ctx, m.user, in); err != nil {
		return fmt.Errorf("memorlangchaingo: save: %w", err)
	}
	if m.assistant != "" {
		out, err := memory.GetInputValue(outputs, m.outputKey)
		if err != nil {
			return fmt.Errorf("memorlangchaingo: save: %w", err)
		}
		if _, err := m.engine.Add(ctx, m.user, out, memor.Speaker(m.assistant)); err != nil {
			return fmt.Errorf("memorlangchaingo: save: %w", err)
		}
	}
	if err := m.engine.Flush(ctx, m.user); err != nil {
		return fmt.Errorf("memorlangchaingo: save: %w", err)
	}
	return nil
}

// Clear forgets the user: every episode and fact memor holds for them is
// deleted (memor.Engine.Forget), as a chat history's Clear empties it.
func (m *Memory) Clear(ctx context.Context) error {
	if m.engine == nil {
		return ErrNoEngine
	}
	if err := m.engine.Forget(ctx, m.user); err != nil {
		return fmt.Errorf("memorlangchaingo: clear: %w", err)
	}
	return nil
}
