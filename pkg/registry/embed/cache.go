package embed

import "container/list"

// lru is a size-capped map from keys to vectors that forgets the least
// recently used entry first. It is not safe for concurrent use: the
// Reranker guards it with cacheMu.
type lru[K comparable] struct {
	max   int
	order *list.List // of *lruEntry[K], most recently used first
	items map[K]*list.Element
}

type lruEntry[K comparable] struct {
	key K
	vec []float32
}

func newLRU[K comparable](max int) *lru[K] {
	return &lru[K]{max: max, order: list.New(), items: make(map[K]*list.Element)}
}

func (c *lru[K]) get(k K) ([]float32, bool) {
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[K]).vec, true
}

func (c *lru[K]) add(k K, v []float32) {
	if e, ok := c.items[k]; ok {
		e.Value.(*lruEntry[K]).vec = v
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry[K]{key: k, vec: v})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[K]).key)
	}
}

// has reports whether k is cached without making it recent.
func (c *lru[K]) has(k K) bool {
	_, ok := c.items[k]
	return ok
}

func (c *lru[K]) len() int { return c.order.Len() }
