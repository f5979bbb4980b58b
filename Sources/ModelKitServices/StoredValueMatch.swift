import ModelKit

// Why: Kinto on PostgreSQL reads its records back through python-rapidjson in its native number
// mode, which parses a double's text to the nearest double or one next to it: a record saved with
// latitude 45.496620033519676 comes back as 45.49662003351968, one unit in the last place away.
// The memory backend keeps the number exactly. A retried batch recognises its own earlier write by
// comparing the record the server holds with the one it sent, so that comparison must allow it.

extension ModelValue {
    /// Whether `stored`, a value read back from a server, is this value as it was sent: equal,
    /// except that doubles may differ by a few units in the last place (at most 4), as a server's
    /// JSON parser may leave them.
    ///
    /// - Complexity: O(*n*) for *n* values in all, plus O(*k*) per object of *k* keys.
    func matchesStored(_ stored: ModelValue) -> Bool {
        switch (self, stored) {
        case (.double(let sent), .double(let read)):
            return sent == read || Self.closeDoubles(sent, read)
        case (.array(let sent), .array(let read)):
            return sent.count == read.count && zip(sent, read).allSatisfy { $0.matchesStored($1) }
        case (.object(let sent), .object(let read)):
            guard sent.count == read.count else { return false }
            for (key, value) in sent {
                guard let other = read[key], value.matchesStored(other) else { return false }
            }
            return true
        default:
            return self == stored
        }
    }

    /// Two finite doubles of the same sign at most 4 representable doubles apart.
    private static func closeDoubles(_ a: Double, _ b: Double) -> Bool {
        guard a.isFinite, b.isFinite, a.sign == b.sign else { return false }
        let distance = a.bitPattern > b.bitPattern ? a.bitPattern - b.bitPattern : b.bitPattern - a.bitPattern
        return distance <= 4
    }
}
