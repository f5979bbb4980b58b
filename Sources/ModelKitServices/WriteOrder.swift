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
