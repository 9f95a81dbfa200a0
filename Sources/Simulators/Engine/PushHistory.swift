/// The most recent pushes, oldest first, in a ring of fixed capacity.
struct PushHistory {
    private var storage: [PushEntry] = []
    private var start = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    mutating func append(_ entry: PushEntry) {
        if storage.count < capacity {
            storage.append(entry)
        } else {
            storage[start] = entry
            start = (start + 1) % capacity
        }
    }

    /// The entries whose sequence is above `sequence`, oldest first.
    func entries(after sequence: Int) -> [PushEntry] {
        var out: [PushEntry] = []
        for offset in 0..<storage.count {
            let entry = storage[(start + offset) % storage.count]
            if entry.sequence > sequence { out.append(entry) }
        }
        return out
    }

    mutating func removeAll() {
        storage.removeAll()
        start = 0
    }
}
