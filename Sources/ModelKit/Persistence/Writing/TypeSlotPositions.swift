/// The positions a walk gave the models of one context (the root's), by class and by each
/// model's ``AnyModelObject/typeSlot``: its place in its context's list of its type.
///
/// A model of the context already knows where it is among its type's models, so finding its
/// position is an array read, where a table by id hashes, probes, fails for every new model,
/// probes again to insert it and grows as the walk goes on. Each class's positions are kept in
/// pages of ``pageSize`` slots, made when a model in them is first reached, so that a walk that
/// reaches a few models of a large context stays small.
///
/// Two models of one class can share a type slot when they were listed under different types
/// (a subclass listed under its superclass): the caller checks that the position it finds is
/// the model's own, and uses its table by id for a model whose slot is taken.
final class TypeSlotPositions {
    static let pageShift = 10
    static let pageSize = 1 << pageShift

    /// What the walk keeps for one class. Plain pointers and numbers, so that reading it
    /// retains nothing (each class's positions are read for every reference).
    struct Table {
        /// The class's pages, by slot / ``pageSize``: each slot holds its model's position + 1,
        /// or 0 while the model has none; a page is `nil` until one of its models is positioned.
        var pages: UnsafeMutablePointer<UnsafeMutablePointer<Int32>?>?
        var pageCount = 0
        /// The elements of the class's list in the context as it was when the walk first
        /// queued one of its models (see `lists`), to check that a model is in it.
        var listBase: UnsafeRawPointer?
        var listCount = 0
        var hasList = false
    }

    /// The classes seen, in the order seen; a walk meets few, so a scan finds one.
    @exclusivity(unchecked) private var classes: [ObjectIdentifier] = []
    @exclusivity(unchecked) private var tables = UnsafeMutablePointer<Table>.allocate(capacity: 4)
    @exclusivity(unchecked) private var tableCapacity = 4
    /// The copies of the context's lists: each keeps the models in it alive, so that the walk
    /// need not retain each model it queues.
    @exclusivity(unchecked) private var lists: [Any] = []
    /// The last class asked about and its index: models come in runs of one class.
    @exclusivity(unchecked) private var lastClass: ObjectIdentifier?
    @exclusivity(unchecked) private var lastTable = 0

    deinit {
        for index in classes.indices {
            let table = tables[index]
            for page in 0..<table.pageCount { table.pages?[page]?.deallocate() }
            table.pages?.deallocate()
        }
        tables.deinitialize(count: classes.count)
        tables.deallocate()
    }

    /// The index of the positions of `modelClass`'s models (made empty when it is new).
    @inline(__always) func table(for modelClass: ObjectIdentifier) -> Int {
        if modelClass == lastClass { return lastTable }
        return findTable(for: modelClass)
    }

    private func findTable(for modelClass: ObjectIdentifier) -> Int {
        let index: Int
        if let found = classes.firstIndex(of: modelClass) {
            index = found
        } else {
            index = classes.count
            if index == tableCapacity {
                let grown = UnsafeMutablePointer<Table>.allocate(capacity: 2 * tableCapacity)
                grown.moveInitialize(from: tables, count: index)
                tables.deallocate()
                tables = grown
                tableCapacity *= 2
            }
            (tables + index).initialize(to: Table())
            classes.append(modelClass)
        }
        lastClass = modelClass
        lastTable = index
        return index
    }

    /// Whether `table` has its class's list (see ``keep(_:table:)``).
    @inline(__always) func hasList(table: Int) -> Bool { tables[table].hasList }

    /// Keeps `models`, the context's list of `table`'s class, for the rest of the walk.
    func keep<M: Model>(_ models: [M], table: Int) {
        lists.append(models)
        tables[table].listBase = models.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        tables[table].listCount = models.count
        tables[table].hasList = true
    }

    /// Whether `table`'s kept list holds `model` at `slot`, and so keeps it alive.
    @inline(__always) func keepsAlive(_ model: ObjectIdentifier, table: Int, slot: Int) -> Bool {
        guard let base = tables[table].listBase, slot < tables[table].listCount else { return false }
        return base.load(fromByteOffset: slot * MemoryLayout<UnsafeRawPointer>.stride, as: UnsafeRawPointer.self)
            == UnsafeRawPointer(bitPattern: UInt(bitPattern: model))
    }

    /// The position stored for `slot` in `table`, or -1.
    @inline(__always) func position(table: Int, slot: Int) -> Int {
        let page = slot >> Self.pageShift
        guard page < tables[table].pageCount, let base = tables[table].pages.unsafelyUnwrapped[page] else { return -1 }
        return Int(base[slot & (Self.pageSize - 1)]) - 1
    }

    /// Stores `position` for `slot` in `table`, making its page if needed.
    @inline(__always) func setPosition(_ position: Int, table: Int, slot: Int) {
        let page = slot >> Self.pageShift
        let base = page < tables[table].pageCount ? tables[table].pages.unsafelyUnwrapped[page] : nil
        (base ?? makePage(page, table: table))[slot & (Self.pageSize - 1)] = Int32(truncatingIfNeeded: position + 1)
    }

    private func makePage(_ page: Int, table: Int) -> UnsafeMutablePointer<Int32> {
        if page >= tables[table].pageCount {
            // The directory grows to twice the pages needed, so that a walk over a large
            // context grows it a few times.
            let count = Swift.max(2 * (page + 1), 4)
            let pages = UnsafeMutablePointer<UnsafeMutablePointer<Int32>?>.allocate(capacity: count)
            pages.initialize(repeating: nil, count: count)
            if let old = tables[table].pages {
                pages.update(from: old, count: tables[table].pageCount)
                old.deallocate()
            }
            tables[table].pages = pages
            tables[table].pageCount = count
        }
        let base = UnsafeMutablePointer<Int32>.allocate(capacity: Self.pageSize)
        base.initialize(repeating: 0, count: Self.pageSize)
        tables[table].pages.unsafelyUnwrapped[page] = base
        return base
    }
}
