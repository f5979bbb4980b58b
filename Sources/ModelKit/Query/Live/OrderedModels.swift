import Foundation

// The ordered storage of a live result set: a sorted sequence of models kept in chunks of at
// most `chunkCapacity`, so that inserting or removing one model moves at most a chunk's worth of
// pointers (and updates one start per chunk), instead of every model after it as one flat array
// would. A context that loads or clears 100,000 matching models reports each one; with a flat
// array that was quadratic.
//
// Beside each model it keeps a key, 8 bytes its owner derives from the values that placed the
// model (a live query ordered by a string: the string's first bytes, see `LiveOrder.Probe.key`). A
// search decides by the keys where they differ and reads a model only where they don't: a model
// read is a cache miss or more at thousands of results, scattered over the heap, and most of a
// search's time went to them (in a `perf record -g` of live-edit and live-batch).

/// Models in order, in chunks, each with its key; the position of a model is found by binary
/// search.
struct OrderedModels<Element: AnyObject> {
    /// The key of a model that has none: its order is read from the model.
    static var noKey: UInt64 { .max }
    /// The models, in order, a chunk at a time; no chunk is empty.
    private(set) var chunks: [[Element]] = []
    /// The models' keys, chunk for chunk and model for model.
    private(set) var keys: [[UInt64]] = []
    /// The position of each chunk's first model in the whole sequence.
    private var starts: [Int] = []
    /// How many models there are.
    private(set) var count = 0

    /// The most models a chunk holds before it splits in two.
    static var chunkCapacity: Int { 512 }

    init() {}

    /// `sorted`, already in order, with their `keys` (none, if `nil`).
    init(_ sorted: [Element], keys sortedKeys: [UInt64]? = nil) {
        precondition(sortedKeys == nil || sortedKeys?.count == sorted.count, "a key for each model")
        let size = Self.chunkCapacity / 2
        for start in stride(from: 0, to: sorted.count, by: size) {
            let end = min(start + size, sorted.count)
            starts.append(start)
            chunks.append(Array(sorted[start..<end]))
            keys.append(sortedKeys.map { Array($0[start..<end]) } ?? Array(repeating: Self.noKey, count: end - start))
        }
        count = sorted.count
    }

    /// The model at `position`.
    ///
    /// - Complexity: O(log c) for c chunks.
    subscript(position: Int) -> Element {
        let chunk = chunk(containing: position)
        return chunks[chunk][position - starts[chunk]]
    }

    /// The key of the model at `position`.
    ///
    /// - Complexity: O(log c) for c chunks.
    func key(at position: Int) -> UInt64 {
        let chunk = chunk(containing: position)
        return keys[chunk][position - starts[chunk]]
    }

    /// All models, in order.
    var elements: [Element] { chunks.flatMap { $0 } }

    /// All keys, in the models' order.
    var allKeys: [UInt64] { keys.flatMap { $0 } }

    /// The first position at or after which models satisfy the predicate that `byKey` decides
    /// from a model's key where it can (`nil` where it can't), and `isAtOrAfter` from the model
    /// itself otherwise. It must be false for a prefix of the models and true for the rest.
    ///
    /// - Complexity: O(log n) calls of `byKey`, and of `isAtOrAfter` where `byKey` can't tell.
    func partitioningIndex(byKey: (UInt64) -> Bool?, else isAtOrAfter: (Element) throws -> Bool) rethrows -> Int {
        // Read through buffer pointers: this code is not specialized for the model type, and
        // `chunks[middle][…]` retained the chunk's array and the model for every step (most
        // of a batch's search time went to retains and releases, in a `perf record -g` of
        // live-batch-few). A model is loaded only when its key can't tell.
        try chunks.withUnsafeBufferPointer { chunks in
            try keys.withUnsafeBufferPointer { keys in
                func test(_ chunk: Int, _ offset: Int) throws -> Bool {
                    if let decided = keys[chunk].withUnsafeBufferPointer({ byKey($0[offset]) }) { return decided }
                    return try chunks[chunk].withUnsafeBufferPointer { try isAtOrAfter($0[offset]) }
                }
                // The first chunk whose last model is at or after, then the first model in it.
                var low = 0
                var high = chunks.count
                while low < high {
                    let middle = (low + high) / 2
                    if try test(middle, chunks[middle].count - 1) { high = middle } else { low = middle + 1 }
                }
                guard low < chunks.count else { return count }
                var first = 0
                var last = chunks[low].count
                while first < last {
                    let middle = (first + last) / 2
                    if try test(low, middle) { last = middle } else { first = middle + 1 }
                }
                return starts[low] + first
            }
        }
    }

    /// Inserts `element`, with its `key`, at `position` (0...count).
    ///
    /// - Complexity: O(log c + chunkCapacity + c) for c chunks.
    mutating func insert(_ element: Element, key: UInt64 = noKey, at position: Int) {
        guard !chunks.isEmpty else {
            chunks = [[element]]
            keys = [[key]]
            starts = [0]
            count = 1
            return
        }
        var chunk = position == count ? chunks.count - 1 : chunk(containing: position)
        if chunks[chunk].count == Self.chunkCapacity {
            // Split before the insertion would grow the full chunk's storage to twice its size
            // (and keep that for the half left in it): two halves, each allocated to fit.
            let half = Self.chunkCapacity / 2
            let head = Array(chunks[chunk][..<half])
            let tail = Array(chunks[chunk][half...])
            chunks[chunk] = head
            chunks.insert(tail, at: chunk + 1)
            let headKeys = Array(keys[chunk][..<half])
            let tailKeys = Array(keys[chunk][half...])
            keys[chunk] = headKeys
            keys.insert(tailKeys, at: chunk + 1)
            starts.insert(starts[chunk] + half, at: chunk + 1)
            if position - starts[chunk] > half { chunk += 1 }
        }
        Self.insert(element, into: &chunks[chunk], at: position - starts[chunk])
        keys[chunk].insert(key, at: position - starts[chunk])
        count += 1
        shiftStarts(from: chunk + 1, by: 1)
    }

    /// Removes and returns the model at `position`.
    ///
    /// - Complexity: O(log c + chunkCapacity + c) for c chunks.
    @discardableResult
    mutating func remove(at position: Int) -> Element {
        let chunk = chunk(containing: position)
        let element = Self.remove(from: &chunks[chunk], at: position - starts[chunk])
        keys[chunk].remove(at: position - starts[chunk])
        count -= 1
        if chunks[chunk].isEmpty {
            chunks.remove(at: chunk)
            keys.remove(at: chunk)
            starts.remove(at: chunk)
            shiftStarts(from: chunk, by: -1)
        } else {
            fitIfHalfSpare(chunk)
            shiftStarts(from: chunk + 1, by: -1)
        }
        return element
    }

    /// Removes the models whose identifiers satisfy `shouldRemove`, the others keeping their
    /// order, and returns the removed ones with their positions before and keys, ascending.
    ///
    /// No model is touched but those removed: the identifiers are read from the chunks' storage
    /// as the references' bits, and the kept models are moved within their chunks, not copied.
    /// A copy, and handing each model to the predicate, retained and released every model,
    /// each a cache miss at thousands of results (in a `perf record -g` of live-batch).
    ///
    /// - Complexity: O(n) calls of `shouldRemove`, and moving at most the models of the chunks
    ///   that lose one.
    mutating func removeAll(where shouldRemove: (ObjectIdentifier) -> Bool) -> [(index: Int, model: Element, key: UInt64)] {
        var removed: [(index: Int, model: Element, key: UInt64)] = []
        var offsets: [Int] = []
        var chunk = 0
        while chunk < chunks.count {
            offsets.removeAll(keepingCapacity: true)
            chunks[chunk].withUnsafeBufferPointer { models in
                // A class reference is its object's address, which is what ObjectIdentifier
                // holds; loading it as a word from raw memory retains nothing.
                precondition(MemoryLayout<Element>.stride == MemoryLayout<UInt>.stride, "a reference is one word")
                let bytes = UnsafeRawBufferPointer(models)
                for offset in models.indices {
                    let word = bytes.load(fromByteOffset: offset &* MemoryLayout<UInt>.stride, as: UInt.self)
                    if shouldRemove(unsafeBitCast(word, to: ObjectIdentifier.self)) { offsets.append(offset) }
                }
            }
            guard !offsets.isEmpty else {
                chunk += 1
                continue
            }
            let start = starts[chunk]
            for offset in offsets { removed.append((start + offset, chunks[chunk][offset], keys[chunk][offset])) }
            if offsets.count == chunks[chunk].count {
                chunks.remove(at: chunk)
                keys.remove(at: chunk)
                starts.remove(at: chunk)
            } else {
                Self.compact(&chunks[chunk], &keys[chunk], removing: offsets)
                fitIfHalfSpare(chunk)
                chunk += 1
            }
        }
        guard !removed.isEmpty else { return removed }
        count -= removed.count
        if chunks.count > 1 && count < chunks.count * (Self.chunkCapacity / 8) {
            // Mostly spare chunks (a batch took most of their models out): fewer, fuller ones,
            // so that positions are found among fewer chunks and starts recounted over fewer.
            self = OrderedModels(elements, keys: allKeys)
        } else {
            recountStarts(from: 0)
        }
        return removed
    }

    /// `array.insert(element, at: offset)`, as an append and a rotation of the words after
    /// `offset`: in code not specialized for the model type, `Array.insert` went through generic
    /// `replaceSubrange` and metadata look-ups (two thirds of an insertion, in a
    /// `perf record -g` of live-batch).
    ///
    /// - Complexity: O(`array.count` - `offset`).
    private static func insert(_ element: Element, into array: inout [Element], at offset: Int) {
        precondition(offset >= 0 && offset <= array.count, "offset \(offset) out of 0...\(array.count)")
        array.append(element)
        rotate(&array, from: array.count - 1, to: offset)
    }

    /// `array.remove(at: offset)`, as a rotation of the words after `offset` and a
    /// `removeLast()` (see ``insert(_:into:at:)``).
    ///
    /// - Complexity: O(`array.count` - `offset`).
    private static func remove(from array: inout [Element], at offset: Int) -> Element {
        precondition(offset >= 0 && offset < array.count, "offset \(offset) out of 0..<\(array.count)")
        rotate(&array, from: offset, to: array.count - 1)
        return array.removeLast()
    }

    /// Moves the reference at `from` to `to`, the ones between one place toward `from`, as
    /// words: each reference stays in the array exactly once, so no count changes.
    ///
    /// - Complexity: O(|`from` - `to`|).
    private static func rotate(_ array: inout [Element], from: Int, to: Int) {
        guard from != to else { return }
        withWords(of: &array) { words in
            let moved = words[from]
            let base = words.baseAddress!
            let stride = MemoryLayout<UInt>.stride
            if from > to {
                memmove(base + to + 1, base + to, (from - to) &* stride)
            } else {
                memmove(base + from, base + from + 1, (to - from) &* stride)
            }
            words[to] = moved
        }
    }

    /// Runs `body` on the references of `array` as words (their objects' addresses), the memory
    /// bound to `UInt` meanwhile: moving words moves references without retaining or releasing
    /// them, in code not specialized for the model type that would otherwise go through value
    /// witnesses per element. `body` must leave each reference in the array exactly once.
    private static func withWords<Result>(
        of array: inout [Element], _ body: (UnsafeMutableBufferPointer<UInt>) -> Result
    ) -> Result {
        precondition(MemoryLayout<Element>.stride == MemoryLayout<UInt>.stride, "a reference is one word")
        return array.withUnsafeMutableBufferPointer { elements in
            elements.withMemoryRebound(to: UInt.self) { body($0) }
        }
    }

    /// Takes the models at `offsets` (ascending) out of `models`, and their keys out of `keys`:
    /// the kept ones forward by swaps, the removed ones then last, and dropped.
    ///
    /// The models are swapped as words (see ``withWords(of:_:)``): a generic `swapAt` went
    /// through value witnesses per element (most of a batch's walk after the look-ups, in a
    /// `perf record -g` of live-batch). A swap keeps each reference exactly once in the array,
    /// so the counts stay right; `removeLast` releases the removed ones.
    private static func compact(_ models: inout [Element], _ keys: inout [UInt64], removing offsets: [Int]) {
        let kept = withWords(of: &models) { compactInPlace($0, removing: offsets) }
        models.removeLast(models.count - kept)
        _ = keys.withUnsafeMutableBufferPointer { compactInPlace($0, removing: offsets) }
        keys.removeLast(keys.count - kept)
    }

    /// Moves the elements not at `offsets` (ascending) to the front of `elements`, in order, by
    /// swaps; returns how many there are. Called with plain integers only, so specialized.
    private static func compactInPlace<T>(_ elements: UnsafeMutableBufferPointer<T>, removing offsets: [Int]) -> Int {
        var write = 0
        var next = 0
        for read in elements.indices {
            if next < offsets.count && offsets[next] == read {
                next += 1
                continue
            }
            if write != read { elements.swapAt(write, read) }
            write += 1
        }
        return write
    }

    /// Removals don't give storage back: once half of a chunk's is spare, the chunk moves to
    /// storage that fits, with an eighth to spare, so that insertions and removals around that
    /// count don't move it back and forth (each move copies at most half a chunk).
    private mutating func fitIfHalfSpare(_ chunk: Int) {
        guard chunks[chunk].count * 2 <= chunks[chunk].capacity && chunks[chunk].capacity > 16 else { return }
        let models = chunks[chunk]
        var fitted: [Element] = []
        fitted.reserveCapacity(models.count + models.count / 8)
        fitted.append(contentsOf: models)
        chunks[chunk] = fitted
        var fittedKeys: [UInt64] = []
        fittedKeys.reserveCapacity(models.count + models.count / 8)
        fittedKeys.append(contentsOf: keys[chunk])
        keys[chunk] = fittedKeys
    }

    /// The chunk that holds `position` (0..<count): the last chunk starting at or before it.
    private func chunk(containing position: Int) -> Int {
        precondition(position >= 0 && position < count, "position \(position) out of 0..<\(count)")
        var low = 0
        var high = starts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= position { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// Moves the starts of the chunks from `chunk` on by `delta`: after one model went into or
    /// out of the chunk before them. A loop over integers, where a recount read every chunk's
    /// count through the array of arrays (in code not specialized for the model type, a
    /// quarter of a batch's insertions, in a `perf record -g` of ModelKitProfile live-batch).
    private mutating func shiftStarts(from chunk: Int, by delta: Int) {
        guard chunk < starts.count else { return }
        starts.withUnsafeMutableBufferPointer { starts in
            for index in chunk..<starts.count { starts[index] &+= delta }
        }
    }

    private mutating func recountStarts(from chunk: Int) {
        guard chunk < chunks.count else { return }
        // Through buffer pointers, as in `partitioningIndex`: reading a chunk's count from the
        // array of arrays retained and released that chunk, in unspecialized code.
        chunks.withUnsafeBufferPointer { chunks in
            starts.withUnsafeMutableBufferPointer { starts in
                var start = chunk == 0 ? 0 : starts[chunk - 1] + chunks[chunk - 1].count
                for index in chunk..<chunks.count {
                    starts[index] = start
                    start += chunks[index].count
                }
            }
        }
    }
}
