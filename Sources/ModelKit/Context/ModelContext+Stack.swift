import Foundation

// The main actor's context stack: the current context, push, pop, activate and deactivate of
// ModelKit for Objective-C. The stack and everything that defaults to the current context are
// isolated to the main actor, so that the compiler, not a lock, keeps them to one domain: other
// domains (an actor of the app's, see `ModelActor`) hold a context of their own and pass it.

extension ModelContext {
    /// The main actor's root context: always there, never popped. UI code works in it.
    ///
    /// ```swift
    /// @MainActor func showAuthors() throws {
    ///     let authors = try Author.query(in: .main).results()
    /// }
    /// ```
    ///
    /// - Complexity: O(1).
    @MainActor public static var main: ModelContext { root }

    // Stored privately and read through a computed property: the compiler's region analysis
    // treats a value read from a stored `static let` as unconnected to the main actor, so
    // `let c = ModelContext.main; Task.detached { … c … }` compiled; a getter's result is in the
    // main actor's region, and the same code is the error it should be.
    @MainActor private static let root = ModelContext(owner: MainActor.shared)

    /// The main actor's stack, root first.
    @MainActor private static var stack: [ModelContext] = [root]

    /// The contexts bound by the enclosing ``withCurrent(_:operation:)-(_,()->Result)`` calls,
    /// by the key their task carries. The key is task-local (so that other tasks on the main
    /// actor never see another task's binding); the context is not `Sendable`, so it stays here,
    /// on the main actor.
    @MainActor private static var scopes: [UInt64: ModelContext] = [:]
    @MainActor private static var nextScope: UInt64 = 0
    @TaskLocal private static var scope: UInt64?

    /// The context that model APIs on the main actor use when none is given.
    ///
    /// It is the context bound by the innermost ``withCurrent(_:operation:)-(_,()->Result)``
    /// around the caller, if any; otherwise the top of the main actor's context stack (``main``
    /// when nothing was pushed).
    ///
    /// - Complexity: O(1).
    @MainActor public static var current: ModelContext {
        if let scope, let context = scopes[scope] { return context }
        return stack[stack.count - 1]
    }

    /// The contexts on the stack, bottom (``main``) first.
    ///
    /// - Complexity: O(n) in the depth of the stack.
    @MainActor public static var stackSnapshot: [ModelContext] { stack }

    /// Pushes a new, empty context onto the stack and returns it. It becomes ``current`` (outside
    /// any ``withCurrent(_:operation:)-(_,()->Result)`` scope).
    ///
    /// ```swift
    /// @MainActor func importBatch() {
    ///     ModelContext.push()
    ///     for i in 0..<100 { _ = Author.instance(objectId: "\(i)") }
    ///     // … process …
    ///     ModelContext.pop()   // releases the context and its models
    /// }
    /// ```
    ///
    /// - Complexity: O(1).
    @MainActor @discardableResult
    public static func push() -> ModelContext {
        let context = ModelContext(owner: MainActor.shared)
        stack.append(context)
        return context
    }

    /// Pops the top context off the stack and returns it; `nil` when only ``main`` is left.
    ///
    /// A popped context that nobody holds is destroyed with its models. One that you keep can be
    /// put back later with ``activate()``.
    ///
    /// - Complexity: O(1).
    @MainActor @discardableResult
    public static func pop() -> ModelContext? {
        stack.count > 1 ? stack.removeLast() : nil
    }

    /// Makes this context the top of the main actor's stack (moving it there if it is already on
    /// the stack).
    ///
    /// - Complexity: O(n) in the depth of the stack.
    @MainActor public func activate() {
        if let index = Self.stack.firstIndex(where: { $0 === self }) {
            guard index != 0 else { return }
            Self.stack.remove(at: index)
        }
        Self.stack.append(self)
    }

    /// Takes this context off the stack. ``main`` stays at the bottom: deactivating it does
    /// nothing.
    ///
    /// - Complexity: O(n) in the depth of the stack.
    @MainActor public func deactivate() {
        if let index = Self.stack.firstIndex(where: { $0 === self }), index != 0 {
            Self.stack.remove(at: index)
        }
    }

    /// Whether the context is on the main actor's stack.
    ///
    /// - Complexity: O(n) in the depth of the stack.
    @MainActor public var isActive: Bool {
        Self.stack.contains { $0 === self }
    }

    /// Resets the context system: clears every context on the stack and pops all but ``main``
    /// (the seed's `clearAllContexts`). Contexts you hold that are not on the stack are untouched.
    ///
    /// - Complexity: O(n) in the number of models on the stack.
    @MainActor public static func clearAll() {
        let contexts = stack
        stack.removeSubrange(1...)
        for context in contexts { context.clear() }
    }

    /// Runs `operation` with `context` as ``current``, without touching the stack.
    ///
    /// Other tasks on the main actor keep their own current context, so models created here never
    /// land in anyone else's context.
    ///
    /// ```swift
    /// @MainActor func preview() {
    ///     let scratch = ModelContext()
    ///     ModelContext.withCurrent(scratch) {
    ///         _ = Author.instance(objectId: "42")   // lands in `scratch`
    ///     }
    /// }
    /// ```
    ///
    /// - Complexity: O(1) beyond `operation`.
    @MainActor
    public static func withCurrent<Result>(
        _ context: ModelContext, operation: () throws -> Result
    ) rethrows -> Result {
        let key = bind(context)
        defer { scopes[key] = nil }
        return try $scope.withValue(key, operation: operation)
    }

    /// Runs the asynchronous `operation` with `context` as ``current`` for this task, across its
    /// suspension points.
    ///
    /// ```swift
    /// @MainActor func refresh() async throws {
    ///     let imports = ModelContext()
    ///     let feed = try await ModelContext.withCurrent(imports) {
    ///         try Feed.instance(fromJSON: try await download())
    ///     }
    /// }
    /// ```
    ///
    /// - Complexity: O(1) beyond `operation`.
    @MainActor
    public static func withCurrent<Result>(
        _ context: ModelContext, operation: @MainActor () async throws -> Result
    ) async rethrows -> Result {
        let key = bind(context)
        defer { scopes[key] = nil }
        return try await $scope.withValue(key, operation: operation)
    }

    @MainActor private static func bind(_ context: ModelContext) -> UInt64 {
        nextScope &+= 1
        scopes[nextScope] = context
        return nextScope
    }
}
