import Foundation

// The context stack of ModelKit for Objective-C (push, pop, activate, deactivate), plus a
// task-local current context so that concurrent code can work in a context of its own.

extension ModelContext {
    /// The process-wide stack. Its bottom is a root context that is never popped.
    private static let stack = Locked<[ModelContext]>([ModelContext()])

    /// A context bound to the current task (and its child tasks) or the current synchronous scope.
    @TaskLocal static var scoped: ModelContext?

    /// The context that model APIs use when none is given.
    ///
    /// It is the context bound by the innermost ``withCurrent(_:operation:)-swift.type.method``
    /// around the caller, if any; otherwise the top of the context stack.
    ///
    /// - Complexity: O(1).
    public static var current: ModelContext {
        if let scoped { return scoped }
        return stack.withLock { $0[$0.count - 1] }
    }

    /// The contexts on the stack, bottom (the root context) first.
    public static var stackSnapshot: [ModelContext] {
        stack.withLock { $0 }
    }

    /// Pushes a new, empty context onto the stack and returns it. It becomes ``current`` (outside
    /// any ``withCurrent(_:operation:)-swift.type.method`` scope).
    ///
    /// ```swift
    /// ModelContext.push()
    /// for i in 0..<100 { _ = Author.instance(objectId: "\(i)") }
    /// // … process …
    /// ModelContext.pop()   // releases the context and its models
    /// ```
    @discardableResult
    public static func push() -> ModelContext {
        let context = ModelContext()
        stack.withLock { $0.append(context) }
        return context
    }

    /// Pops the top context off the stack and returns it; `nil` when only the root context is left.
    ///
    /// A popped context that nobody holds is destroyed with its models. One that you keep can be
    /// put back later with ``activate()``.
    @discardableResult
    public static func pop() -> ModelContext? {
        stack.withLock { stack in stack.count > 1 ? stack.removeLast() : nil }
    }

    /// Makes this context the top of the stack (moving it there if it is already on the stack).
    public func activate() {
        Self.stack.withLock { stack in
            if let index = stack.firstIndex(where: { $0 === self }) {
                guard index != 0 else { return }
                stack.remove(at: index)
            }
            stack.append(self)
        }
    }

    /// Takes this context off the stack. The root context stays at the bottom: deactivating it
    /// does nothing.
    public func deactivate() {
        Self.stack.withLock { stack in
            if let index = stack.firstIndex(where: { $0 === self }), index != 0 {
                stack.remove(at: index)
            }
        }
    }

    /// Whether the context is on the stack.
    public var isActive: Bool {
        Self.stack.withLock { stack in stack.contains { $0 === self } }
    }

    /// Resets the context system: clears every context on the stack and pops all but the root
    /// (the seed's `clearAllContexts`). Contexts you hold that are not on the stack are untouched.
    public static func clearAll() {
        let contexts = stack.withLock { stack -> [ModelContext] in
            let all = stack
            stack.removeSubrange(1...)
            return all
        }
        for context in contexts { context.clear() }
    }

    /// Runs `operation` with `context` as ``current``, for this synchronous scope and any task it
    /// starts, without touching the global stack.
    ///
    /// Other threads and tasks keep their own current context, so models created here never land
    /// in anyone else's context.
    ///
    /// ```swift
    /// let imported = ModelContext()
    /// ModelContext.withCurrent(imported) {
    ///     _ = Author.instance(objectId: "42")   // lands in `imported`
    /// }
    /// ```
    public static func withCurrent<Result>(
        _ context: ModelContext, operation: () throws -> Result
    ) rethrows -> Result {
        try $scoped.withValue(context, operation: operation)
    }

    /// Runs the asynchronous `operation` with `context` as ``current`` for this task and its child
    /// tasks.
    ///
    /// ```swift
    /// let imports = ModelContext()                 // keep it: it owns the models loaded into it
    /// let feed = try await ModelContext.withCurrent(imports) {
    ///     try Feed.instance(fromJSON: try await download())
    /// }
    /// ```
    public static func withCurrent<Result>(
        _ context: ModelContext,
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> Result
    ) async rethrows -> Result {
        try await $scoped.withValue(context, operation: operation, isolation: isolation)
    }
}
