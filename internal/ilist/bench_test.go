package ilist

import (
	"container/list"
	"testing"
)

// The benchmarks compare List with the alternatives on the two patterns
// tpproxy uses: a FIFO (pool waiters, scheduler queues: push at the back,
// take from the front) and an LRU (prepared statements: a hit moves to
// the front, the back is evicted). Each keeps 16 elements in the list.
const benchLen = 16

// handWaiter and handQueue are a list written by hand for one type, as
// pool and scheduler had before this package: the baseline to match.
type handWaiter struct {
	id         int
	prev, next *handWaiter
}

type handQueue struct {
	head, tail *handWaiter
	n          int
}

func (q *handQueue) push(w *handWaiter) {
	w.prev = q.tail
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

func (q *handQueue) remove(w *handWaiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.next, w.prev = nil, nil
	q.n--
}

func (q *handQueue) pushFront(w *handWaiter) {
	w.next = q.head
	if q.head != nil {
		q.head.prev = w
	} else {
		q.tail = w
	}
	q.head = w
	q.n++
}

// methodLinks and methodList are the other generic design: the element
// type is found through a method of a constrained type parameter, which
// generic code calls through its dictionary, not inlined.
type methodLinks[E any] struct{ prev, next *E }

func (l *methodLinks[E]) links() *methodLinks[E] { return l }

type linker[E any] interface {
	*E
	links() *methodLinks[E]
}

type methodList[E any, P linker[E]] struct {
	head, tail *E
	n          int
}

func (l *methodList[E, P]) pushBack(e *E) {
	el := P(e).links()
	el.prev, el.next = l.tail, nil
	if l.tail != nil {
		P(l.tail).links().next = e
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

func (l *methodList[E, P]) remove(e *E) {
	el := P(e).links()
	if el.prev != nil {
		P(el.prev).links().next = el.next
	} else {
		l.head = el.next
	}
	if el.next != nil {
		P(el.next).links().prev = el.prev
	} else {
		l.tail = el.prev
	}
	el.prev, el.next = nil, nil
	l.n--
}

type methodWaiter struct {
	id int
	methodLinks[methodWaiter]
}

func BenchmarkQueue(b *testing.B) {
	b.Run("ilist", func(b *testing.B) {
		var l List[item]
		for _, it := range newItems(benchLen) {
			l.PushBack(it, &it.links)
		}
		b.ReportAllocs()
		for b.Loop() {
			it := l.PopFront()
			l.PushBack(it, &it.links)
		}
	})
	b.Run("hand", func(b *testing.B) {
		var q handQueue
		for i := range benchLen {
			q.push(&handWaiter{id: i})
		}
		b.ReportAllocs()
		for b.Loop() {
			w := q.head
			q.remove(w)
			q.push(w)
		}
	})
	b.Run("method", func(b *testing.B) {
		var l methodList[methodWaiter, *methodWaiter]
		for i := range benchLen {
			l.pushBack(&methodWaiter{id: i})
		}
		b.ReportAllocs()
		for b.Loop() {
			w := l.head
			l.remove(w)
			l.pushBack(w)
		}
	})
	b.Run("container", func(b *testing.B) {
		// The element keeps its *list.Element for O(1) removal.
		type waiter struct {
			id int
			el *list.Element
		}
		l := list.New()
		for i := range benchLen {
			w := &waiter{id: i}
			w.el = l.PushBack(w)
		}
		b.ReportAllocs()
		for b.Loop() {
			w := l.Front().Value.(*waiter)
			l.Remove(w.el)
			w.el = l.PushBack(w)
		}
	})
}

func BenchmarkLRU(b *testing.B) {
	// Each op uses the element in the middle (moves it to the front),
	// then evicts the back and inserts it again at the front.
	b.Run("ilist", func(b *testing.B) {
		var l List[item]
		its := newItems(benchLen)
		for _, it := range its {
			l.PushFront(it, &it.links)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.MoveToFront(&its[i%benchLen].links)
			it := l.PopBack()
			l.PushFront(it, &it.links)
			i += 7
		}
	})
	b.Run("hand", func(b *testing.B) {
		var q handQueue
		ws := make([]*handWaiter, benchLen)
		for i := range ws {
			ws[i] = &handWaiter{id: i}
			q.pushFront(ws[i])
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if w := ws[i%benchLen]; q.head != w {
				q.remove(w)
				q.pushFront(w)
			}
			w := q.tail
			q.remove(w)
			q.pushFront(w)
			i += 7
		}
	})
	b.Run("container", func(b *testing.B) {
		type stmt struct {
			id int
			el *list.Element
		}
		l := list.New()
		ss := make([]*stmt, benchLen)
		for i := range ss {
			ss[i] = &stmt{id: i}
			ss[i].el = l.PushFront(ss[i])
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.MoveToFront(ss[i%benchLen].el)
			s := l.Remove(l.Back()).(*stmt)
			s.el = l.PushFront(s)
			i += 7
		}
	})
}
