/// The most recent push records, oldest first, in a ring of fixed capacity.
struct PushHistory {
    private var storage: [PushRecord] = []
    private var start = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    mutating func append(_ record: PushRecord) {
        if storage.count < capacity {
            storage.append(record)
        } else {
            storage[start] = record
            start = (start + 1) % capacity
        }
    }

    /// The records whose sequence is above `sequence`, oldest first.
    func records(after sequence: Int) -> [PushRecord] {
        var out: [PushRecord] = []
        for offset in 0..<storage.count {
            let record = storage[(start + offset) % storage.count]
            if record.sequence > sequence { out.append(record) }
        }
        return out
    }

    mutating func removeAll() {
        storage.removeAll()
        start = 0
    }
}
