import Foundation

/// What a context needs of an undo manager: Foundation's `UndoManager` on Apple platforms, and
/// ``ModelUndoManager`` everywhere (Foundation on Linux has no `UndoManager`).
///
/// ```swift
/// context.undoManager = ModelUndoManager()     // or UndoManager() on Apple platforms
/// ```
public protocol UndoRegistering: AnyObject {
    /// Registers `action` as the undo of what was just done (or, while undoing, as its redo).
    func registerModelUndo(_ action: @escaping () -> Void)
    /// Opens a group: everything registered until the matching ``endUndoGrouping()`` is undone
    /// as one step.
    func beginUndoGrouping()
    /// Closes the group opened by the matching ``beginUndoGrouping()``.
    func endUndoGrouping()
}

#if canImport(Darwin)
    extension UndoManager: UndoRegistering {
        /// Registers `action` with the undo manager itself as the target.
        public func registerModelUndo(_ action: @escaping () -> Void) {
            registerUndo(withTarget: self) { _ in action() }
        }
    }
#endif

/// An undo manager with the part of `UndoManager`'s interface that models need, for every
/// platform: Foundation on Linux has no `UndoManager`.
///
/// ```swift
/// let undo = ModelUndoManager()
/// context.undoManager = undo
/// note.title = "Draft"
/// undo.undo()                  // the title is what it was
/// undo.redo()                  // "Draft" again
/// ```
///
/// What is registered outside an explicit group is a step of its own, except that ModelKit
/// groups what one action does (a removal with its cascade, a relationship change with its
/// inverse side). Undo actions retain the models they restore, so removed models can come back:
/// memory is spent only while an undo manager is set, and ``removeAllActions()`` gives it back.
public final class ModelUndoManager: UndoRegistering {
    private var undoStack: [[() -> Void]] = []
    private var redoStack: [[() -> Void]] = []
    private var open: [[() -> Void]] = []

    /// Whether ``undo()`` is running.
    public private(set) var isUndoing = false
    /// Whether ``redo()`` is running.
    public private(set) var isRedoing = false

    /// Creates an undo manager with nothing to undo.
    public init() {}

    /// Whether there is a step to undo.
    public var canUndo: Bool { !undoStack.isEmpty }
    /// Whether there is a step to redo.
    public var canRedo: Bool { !redoStack.isEmpty }
    /// How many groups are open.
    public var groupingLevel: Int { open.count }

    public func registerModelUndo(_ action: @escaping () -> Void) {
        if open.isEmpty {
            push([action])
        } else {
            open[open.count - 1].append(action)
        }
    }

    public func beginUndoGrouping() {
        open.append([])
    }

    /// Closes the innermost open group; closing with none open does nothing.
    public func endUndoGrouping() {
        guard let group = open.popLast() else { return }
        if open.isEmpty {
            push(group)
        } else {
            open[open.count - 1] += group
        }
    }

    /// Undoes the last step (closing open groups first), registering its redo.
    ///
    /// - Complexity: O(k) in the actions of the step.
    public func undo() {
        while !open.isEmpty { endUndoGrouping() }
        guard let group = undoStack.popLast() else { return }
        isUndoing = true
        run(group)
        isUndoing = false
    }

    /// Redoes the last undone step, registering its undo.
    ///
    /// - Complexity: O(k) in the actions of the step.
    public func redo() {
        guard let group = redoStack.popLast() else { return }
        isRedoing = true
        run(group)
        isRedoing = false
    }

    /// Forgets every step, releasing what they retain.
    public func removeAllActions() {
        undoStack = []
        redoStack = []
        open = []
    }

    private func run(_ group: [() -> Void]) {
        beginUndoGrouping()
        for action in group.reversed() { action() }
        endUndoGrouping()
    }

    private func push(_ group: [() -> Void]) {
        guard !group.isEmpty else { return }
        if isUndoing {
            redoStack.append(group)
        } else {
            undoStack.append(group)
            if !isRedoing { redoStack = [] }
        }
    }
}
