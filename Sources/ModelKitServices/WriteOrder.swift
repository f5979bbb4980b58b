/// The order a save writes its records in, and what each write waits for.
///
/// The graph of references is cut into its cycles (strongly connected components; a model in no
/// cycle is one on its own). A component's *level* is 0 when it references no other component,
/// else one more than the highest level it references. Writes go level by level, each component's
/// members next to each other (so that a cycle goes in one request when it fits). A write then
/// only ever references records of lower levels, which come earlier, or of its own cycle, for
/// which no order exists. Components of one level reference none of each other: the requests
/// that hold only them can be in flight at once.
struct WriteOrder {
    /// The nodes, in writing order.
    let order: [Int]
    /// Each node's component, numbered so that a component comes after every component it
    /// references.
    let component: [Int]

    /// - Parameter edges: For each node, the nodes it references.
    /// - Complexity: O(*n* + *e*) for *n* nodes and *e* references, plus O(*c* log *c*) to sort
    ///   the *c* components by level; iterative, so that long chains need no deep stack.
    init(edges: [[Int]]) {
        let components = Self.components(edges)
        var component = [Int](repeating: 0, count: edges.count)
        for (number, members) in components.enumerated() {
            for node in members { component[node] = number }
        }
        // Components come out of Tarjan's walk after every component they reach: each level is
        // known when its component's turn comes.
        var level = [Int](repeating: 0, count: components.count)
        for (number, members) in components.enumerated() {
            var highest = -1
            for node in members {
                for target in edges[node] where component[target] != number { highest = max(highest, level[component[target]]) }
            }
            level[number] = highest + 1
        }
        // Stable: within a level, components keep the walk's order (the root's references first).
        let sorted = components.indices.sorted { level[$0] != level[$1] ? level[$0] < level[$1] : $0 < $1 }
        var order: [Int] = []
        order.reserveCapacity(edges.count)
        for number in sorted { order += components[number] }
        self.order = order
        self.component = component
    }

    /// Tarjan's strongly connected components, each after every component it reaches.
    private static func components(_ edges: [[Int]]) -> [[Int]] {
        let unvisited = -1
        var index = [Int](repeating: unvisited, count: edges.count)
        var lowLink = [Int](repeating: 0, count: edges.count)
        var onStack = [Bool](repeating: false, count: edges.count)
        var stack: [Int] = []
        var components: [[Int]] = []
        var counter = 0
        for start in edges.indices where index[start] == unvisited {
            var calls: [(node: Int, next: Int)] = [(start, 0)]
            index[start] = counter
            lowLink[start] = counter
            counter += 1
            stack.append(start)
            onStack[start] = true
            while let top = calls.last {
                let node = top.node
                if top.next < edges[node].count {
                    calls[calls.count - 1].next += 1
                    let target = edges[node][top.next]
                    if index[target] == unvisited {
                        index[target] = counter
                        lowLink[target] = counter
                        counter += 1
                        stack.append(target)
                        onStack[target] = true
                        calls.append((target, 0))
                    } else if onStack[target] {
                        lowLink[node] = min(lowLink[node], index[target])
                    }
                    continue
                }
                calls.removeLast()
                if let caller = calls.last?.node { lowLink[caller] = min(lowLink[caller], lowLink[node]) }
                guard lowLink[node] == index[node] else { continue }
                var members: [Int] = []
                while let member = stack.popLast() {
                    onStack[member] = false
                    members.append(member)
                    if member == node { break }
                }
                // Discovery order: the component's first-reached model first.
                components.append(members.reversed())
            }
        }
        return components
    }
}

extension WriteOrder {
    /// The order to send the writes of one `/batch` in: by collection name as far as the writes'
    /// dependencies allow, each collection's writes in their given order.
    ///
    /// Kinto on PostgreSQL runs a batch in one transaction, and the first write to a collection
    /// locks that collection's row of its `timestamps` table until the transaction ends. Two
    /// batches in flight that reach collections A and B in opposite orders can each hold the lock
    /// the other waits for: PostgreSQL then aborts one (a deadlock, answered 503 and retried,
    /// after a second's wait). Batches that all take their locks in one global order (collection
    /// names, ascending) cannot deadlock that way.
    ///
    /// A write still never goes before a write of the same batch that it depends on (the memory
    /// backend writes a batch's requests one by one, visibly): when a dependency forces a later
    /// collection first, that batch takes its locks out of order, which only a retry then settles.
    ///
    /// - Parameters:
    ///   - batch: The indices of the batch's writes, in an order that respects `dependencies`.
    ///   - collection: The collection of each write, by index.
    ///   - dependencies: For each write, the earlier writes it must follow (any batch).
    /// - Returns: The indices of `batch`, reordered.
    /// - Complexity: O(*k* · *c* + *d*) for *k* writes of *c* collections with *d* dependencies,
    ///   plus O(*c* log *c*) to sort the collection names.
    static func lockOrder(_ batch: [Int], collection: (Int) -> String, dependencies: [[Int]]) -> [Int] {
        guard batch.count > 1 else { return batch }
        var position: [Int: Int] = [:]
        for (offset, write) in batch.enumerated() { position[write] = offset }
        let names = batch.map(collection)
        let sortedNames = Set(names).sorted()
        guard sortedNames.count > 1 else { return batch }
        var rank: [String: Int] = [:]
        for (number, name) in sortedNames.enumerated() { rank[name] = number }
        // Kahn's algorithm over the dependencies inside the batch, taking the ready write of the
        // lowest collection; within a collection, first ready first.
        var waiting = [Int](repeating: 0, count: batch.count)
        var followers = [[Int]](repeating: [], count: batch.count)
        for (offset, write) in batch.enumerated() where write < dependencies.count {
            for dependency in dependencies[write] {
                guard let before = position[dependency] else { continue }
                waiting[offset] += 1
                followers[before].append(offset)
            }
        }
        var ready = [[Int]](repeating: [], count: sortedNames.count)
        var head = [Int](repeating: 0, count: sortedNames.count)
        for offset in batch.indices where waiting[offset] == 0 { ready[rank[names[offset]] ?? 0].append(offset) }
        var order: [Int] = []
        order.reserveCapacity(batch.count)
        while order.count < batch.count {
            guard let queue = ready.indices.first(where: { head[$0] < ready[$0].count }) else {
                // Dependencies that loop (never made by SavePlan): the rest in the given order.
                let placed = Set(order)
                order += batch.indices.filter { !placed.contains($0) }
                break
            }
            let offset = ready[queue][head[queue]]
            head[queue] += 1
            order.append(offset)
            for follower in followers[offset] {
                waiting[follower] -= 1
                if waiting[follower] == 0 { ready[rank[names[follower]] ?? 0].append(follower) }
            }
        }
        return order.map { batch[$0] }
    }
}
