// The proof behind Fuzz/lsan-suppressions.txt: LeakSanitizer reports as leaked a
// value that a global holds for the whole run, when the value sits in the payload
// of a multi-payload enum (Swift keeps the case in the spare bits of the pointer, so
// the scan does not recognise the pointer). Run scripts/sanitizers/prove-lsan-enum.sh:
// it builds this with -sanitize=address and shows the "Direct leak" report, and
// beside it the same value held by a plain class reference, which is not reported.
indirect enum Shape { case leaf(String), pair(Shape, Shape), list([Shape]) }

#if CLASS_REFERENCE
final class Holder { let text = String(repeating: "a", count: 40) }
let held = Holder()
print(held.text)
#else
let held: Shape = .list([.pair(.leaf(String(repeating: "a", count: 40)), .leaf("b")), .leaf(String(repeating: "c", count: 40))])
print(held)
#endif
