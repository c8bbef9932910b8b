package ilist

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// item is a test element that can be in two lists at once.
type item struct {
	id    int
	links Links[item]
	other Links[item]
}

func newItems(n int) []*item {
	its := make([]*item, n)
	for i := range its {
		its[i] = &item{id: i}
	}
	return its
}

// ids lists l front to back through Front/Next, checking it against Back/
// Prev, All, Backward, Len and every element's Links.
func ids(t *testing.T, l *List[item]) []int {
	t.Helper()
	var fwd []int
	var prev *item
	for it := l.Front(); it != nil; it = it.links.Next() {
		if !it.links.Linked() {
			t.Fatalf("element %d reached through l does not know it is linked", it.id)
		}
		if it.links.Prev() != prev {
			t.Fatalf("element %d: Prev is not the element before it", it.id)
		}
		fwd = append(fwd, it.id)
		prev = it
		if len(fwd) > l.Len() {
			t.Fatalf("more elements than Len %d (a cycle?)", l.Len())
		}
	}
	if prev != l.Back() {
		t.Fatal("Back is not the last element")
	}
	if len(fwd) != l.Len() {
		t.Fatalf("%d elements, Len %d", len(fwd), l.Len())
	}
	var bwd []int
	for it := l.Back(); it != nil; it = it.links.Prev() {
		bwd = append(bwd, it.id)
		if len(bwd) > l.Len() {
			t.Fatal("backward walk longer than Len")
		}
	}
	slices.Reverse(bwd)
	if !slices.Equal(fwd, bwd) {
		t.Fatalf("forward %v, backward reversed %v", fwd, bwd)
	}
	var all, back []int
	for it := range l.All() {
		all = append(all, it.id)
	}
	for it := range l.Backward() {
		back = append(back, it.id)
	}
	slices.Reverse(back)
	if !slices.Equal(fwd, all) || !slices.Equal(fwd, back) {
		t.Fatalf("walk %v, All %v, Backward reversed %v", fwd, all, back)
	}
	if fwd == nil {
		fwd = []int{}
	}
	return fwd
}

func TestOps(t *testing.T) {
	type op func(l *List[item], its []*item)
	pushBack := func(i int) op { return func(l *List[item], its []*item) { l.PushBack(its[i], &its[i].links) } }
	pushFront := func(i int) op { return func(l *List[item], its []*item) { l.PushFront(its[i], &its[i].links) } }
	remove := func(i int) op { return func(l *List[item], its []*item) { l.Remove(&its[i].links) } }
	toFront := func(i int) op { return func(l *List[item], its []*item) { l.MoveToFront(&its[i].links) } }
	toBack := func(i int) op { return func(l *List[item], its []*item) { l.MoveToBack(&its[i].links) } }
	popFront := func(l *List[item], _ []*item) { l.PopFront() }
	popBack := func(l *List[item], _ []*item) { l.PopBack() }
	clear := func(l *List[item], _ []*item) { l.Clear() }

	for _, tc := range []struct {
		name string
		ops  []op
		want []int
	}{
		{"empty", nil, []int{}},
		{"push back", []op{pushBack(0), pushBack(1), pushBack(2)}, []int{0, 1, 2}},
		{"push front", []op{pushFront(0), pushFront(1), pushFront(2)}, []int{2, 1, 0}},
		{"mixed pushes", []op{pushBack(0), pushFront(1), pushBack(2), pushFront(3)}, []int{3, 1, 0, 2}},
		{"remove only", []op{pushBack(0), remove(0)}, []int{}},
		{"remove head", []op{pushBack(0), pushBack(1), pushBack(2), remove(0)}, []int{1, 2}},
		{"remove middle", []op{pushBack(0), pushBack(1), pushBack(2), remove(1)}, []int{0, 2}},
		{"remove tail", []op{pushBack(0), pushBack(1), pushBack(2), remove(2)}, []int{0, 1}},
		{"remove absent", []op{pushBack(0), remove(1)}, []int{0}},
		{"remove twice", []op{pushBack(0), pushBack(1), remove(0), remove(0)}, []int{1}},
		{"push after remove", []op{pushBack(0), pushBack(1), remove(0), pushBack(0)}, []int{1, 0}},
		{"pop front", []op{pushBack(0), pushBack(1), popFront}, []int{1}},
		{"pop back", []op{pushBack(0), pushBack(1), popBack}, []int{0}},
		{"pop empty", []op{popFront, popBack}, []int{}},
		{"to front of tail", []op{pushBack(0), pushBack(1), pushBack(2), toFront(2)}, []int{2, 0, 1}},
		{"to front of middle", []op{pushBack(0), pushBack(1), pushBack(2), toFront(1)}, []int{1, 0, 2}},
		{"to front of head", []op{pushBack(0), pushBack(1), toFront(0)}, []int{0, 1}},
		{"to front of only", []op{pushBack(0), toFront(0)}, []int{0}},
		{"to front of absent", []op{pushBack(0), toFront(1)}, []int{0}},
		{"to back of head", []op{pushBack(0), pushBack(1), pushBack(2), toBack(0)}, []int{1, 2, 0}},
		{"to back of middle", []op{pushBack(0), pushBack(1), pushBack(2), toBack(1)}, []int{0, 2, 1}},
		{"to back of tail", []op{pushBack(0), pushBack(1), toBack(1)}, []int{0, 1}},
		{"to back of absent", []op{pushBack(0), toBack(1)}, []int{0}},
		{"clear", []op{pushBack(0), pushBack(1), clear}, []int{}},
		{"push after clear", []op{pushBack(0), pushBack(1), clear, pushBack(1), pushBack(0)}, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l List[item]
			its := newItems(4)
			for _, o := range tc.ops {
				o(&l, its)
			}
			if got := ids(t, &l); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, it := range its {
				in := slices.Contains(tc.want, it.id)
				if it.links.Linked() != in {
					t.Errorf("element %d: Linked %v, want %v", it.id, it.links.Linked(), in)
				}
				if !in && (it.links.Next() != nil || it.links.Prev() != nil) {
					t.Errorf("element %d is in no list but has neighbours", it.id)
				}
			}
		})
	}
}

func TestZeroValue(t *testing.T) {
	var l List[item]
	if l.Len() != 0 || l.Front() != nil || l.Back() != nil || l.PopFront() != nil || l.PopBack() != nil {
		t.Fatal("zero List is not empty")
	}
	var n Links[item]
	if n.Linked() || n.Next() != nil || n.Prev() != nil || l.Remove(&n) {
		t.Fatal("zero Links is in a list")
	}
	l.MoveToFront(&n)
	l.MoveToBack(&n)
	l.Clear()
	ids(t, &l)
}

// Two lists of the same element type are independent.
func TestTwoLists(t *testing.T) {
	var a, b List[item]
	its := newItems(5)
	a.PushBack(its[0], &its[0].links)
	a.PushBack(its[1], &its[1].links)
	b.PushBack(its[2], &its[2].links)
	b.PushBack(its[3], &its[3].links)
	b.PushBack(its[4], &its[4].links)
	a.MoveToFront(&its[1].links)
	b.MoveToBack(&its[2].links)
	if !b.Remove(&its[3].links) || b.Remove(&its[3].links) {
		t.Fatal("Remove does not report once that it removed")
	}
	a.PushBack(its[3], &its[3].links)
	if got := ids(t, &a); !slices.Equal(got, []int{1, 0, 3}) {
		t.Fatalf("a is %v", got)
	}
	if got := ids(t, &b); !slices.Equal(got, []int{4, 2}) {
		t.Fatalf("b is %v", got)
	}
}

// An element with two Links is in two lists at once, independently.
func TestTwoLinks(t *testing.T) {
	var a, b List[item]
	its := newItems(3)
	for _, it := range its {
		a.PushBack(it, &it.links)
		b.PushFront(it, &it.other)
	}
	a.Remove(&its[1].links)
	b.MoveToBack(&its[2].other)
	if got := ids(t, &a); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("a is %v", got)
	}
	var got []int
	for it := range b.All() {
		got = append(got, it.id)
	}
	if !slices.Equal(got, []int{1, 0, 2}) {
		t.Fatalf("b is %v", got)
	}
}

func TestPushLinkedPanics(t *testing.T) {
	for name, push := range map[string]func(*List[item], *item){
		"PushBack":  func(l *List[item], it *item) { l.PushBack(it, &it.links) },
		"PushFront": func(l *List[item], it *item) { l.PushFront(it, &it.links) },
	} {
		for _, same := range []bool{true, false} {
			var a, b List[item]
			it := &item{}
			a.PushBack(it, &it.links)
			to := &b
			if same {
				to = &a
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s (same list %v) of a linked element did not panic", name, same)
					}
				}()
				push(to, it)
			}()
			if got := ids(t, &a); !slices.Equal(got, []int{0}) || b.Len() != 0 {
				t.Errorf("%s (same list %v) changed the lists: a %v, b has %d", name, same, got, b.Len())
			}
		}
	}
}

func TestPushNilPanics(t *testing.T) {
	var l List[item]
	var n Links[item]
	for name, push := range map[string]func(){
		"PushBack":  func() { l.PushBack(nil, &n) },
		"PushFront": func() { l.PushFront(nil, &n) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s of nil did not panic", name)
				}
			}()
			push()
		}()
	}
	if l.Len() != 0 || n.Linked() {
		t.Fatal("a nil push changed the list")
	}
}

func TestAllRemovingCurrent(t *testing.T) {
	var l, odd List[item]
	for _, it := range newItems(6) {
		l.PushBack(it, &it.links)
	}
	for it := range l.All() {
		if it.id%2 == 1 {
			l.Remove(&it.links)
			odd.PushBack(it, &it.links)
		}
	}
	if got := ids(t, &l); !slices.Equal(got, []int{0, 2, 4}) {
		t.Fatalf("l is %v", got)
	}
	if got := ids(t, &odd); !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("odd is %v", got)
	}
	for it := range l.Backward() {
		l.Remove(&it.links)
	}
	ids(t, &l)
}

func TestAllBreak(t *testing.T) {
	var l List[item]
	for _, it := range newItems(5) {
		l.PushBack(it, &it.links)
	}
	var got []int
	for it := range l.All() {
		if it.id == 2 {
			break
		}
		got = append(got, it.id)
	}
	for it := range l.Backward() {
		if it.id == 2 {
			break
		}
		got = append(got, it.id)
	}
	if !slices.Equal(got, []int{0, 1, 4, 3}) {
		t.Fatalf("got %v", got)
	}
}

func TestNoAllocs(t *testing.T) {
	var l List[item]
	its := newItems(8)
	for _, it := range its {
		l.PushBack(it, &it.links)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		it := l.PopFront()
		l.PushBack(it, &it.links)
		l.MoveToFront(&l.Back().links)
		l.MoveToBack(&l.Front().links)
		it = l.Back()
		l.Remove(&it.links)
		l.PushFront(it, &it.links)
		n := 0
		for range l.All() {
			n++
		}
		for it := l.Front(); it != nil; it = it.links.Next() {
			n--
		}
		if n != 0 {
			panic("walks differ")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}

// model is the reference: two lists as slices of element ids.
type model struct{ lists [2][]int }

func (m *model) where(id int) (int, int) {
	for li, l := range m.lists {
		if i := slices.Index(l, id); i >= 0 {
			return li, i
		}
	}
	return -1, -1
}

// run applies ops (two bytes each: operation and list, element) to two
// lists and the model, checking them against each other after each op.
func run(t *testing.T, ops []byte) {
	const nItems = 8
	var lists [2]List[item]
	its := newItems(nItems)
	var m model
	for len(ops) >= 2 {
		op, li, id := ops[0]%8, int(ops[0]/8)%2, int(ops[1])%nItems
		ops = ops[2:]
		it := its[id]
		inList, at := m.where(id)
		if op >= 2 && op <= 4 && inList >= 0 {
			li = inList // Remove and the moves take an element of l or of none
		}
		l, ml := &lists[li], &m.lists[li]
		switch op {
		case 0, 1: // push, back or front, unless linked (that panics, tested elsewhere)
			if inList >= 0 {
				continue
			}
			if op == 0 {
				l.PushBack(it, &it.links)
				*ml = append(*ml, id)
			} else {
				l.PushFront(it, &it.links)
				*ml = slices.Insert(*ml, 0, id)
			}
		case 2:
			removed := l.Remove(&it.links)
			if removed != (inList >= 0) {
				t.Fatalf("Remove of %d from list %d: %v, model has it in %d", id, li, removed, inList)
			}
			if removed {
				*ml = slices.Delete(*ml, at, at+1)
			}
		case 3:
			l.MoveToFront(&it.links)
			if inList == li {
				*ml = slices.Insert(slices.Delete(*ml, at, at+1), 0, id)
			}
		case 4:
			l.MoveToBack(&it.links)
			if inList == li {
				*ml = append(slices.Delete(*ml, at, at+1), id)
			}
		case 5:
			var want *item
			if len(*ml) > 0 {
				want = its[(*ml)[0]]
				*ml = (*ml)[1:]
			}
			if got := l.PopFront(); got != want {
				t.Fatalf("PopFront of list %d: %v, want %v", li, got, want)
			}
		case 6:
			var want *item
			if n := len(*ml); n > 0 {
				want = its[(*ml)[n-1]]
				*ml = (*ml)[:n-1]
			}
			if got := l.PopBack(); got != want {
				t.Fatalf("PopBack of list %d: %v, want %v", li, got, want)
			}
		case 7:
			if id == 0 { // rarely
				l.Clear()
				*ml = nil
			}
		}
		for i := range lists {
			got := ids(t, &lists[i])
			want := m.lists[i]
			if want == nil {
				want = []int{}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("list %d is %v, model %v", i, got, want)
			}
		}
		for _, it := range its {
			li, _ := m.where(it.id)
			if it.links.Linked() != (li >= 0) {
				t.Fatalf("element %d: Linked %v, the model has it in list %d", it.id, it.links.Linked(), li)
			}
		}
	}
}

func TestRandomOps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ops := make([]byte, 2*r.IntN(300))
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		run(t, ops)
	}
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 3, 2, 2, 1, 5, 0})
	f.Add([]byte{8, 1, 0, 1, 2, 1, 10, 1, 0, 1, 4, 0, 6, 0, 7, 0})
	f.Fuzz(func(t *testing.T, ops []byte) { run(t, ops) })
}
