/// The context a ``ModelArray`` resolves its elements in, as the array holds it.
///
/// An array outlives the read that handed it out (an app may keep a copy), so it must not keep a
/// pointer to a context that is gone. A Swift `weak` reference would do, but forming one gives
/// the context a side table, and from then on every retain and release of the context (each
/// insert, reference read and write of its models) takes the runtime's slow path. So the array
/// holds this small object instead, strongly; it points to its context without retaining it and
/// is cleared by the context's deinitializer. Neither the link nor the array is `Sendable`: both
/// stay in the context's isolation domain, where the deinitializer cannot run between the
/// check and the use.
final class ContextLink {
    /// The context; `nil` once it was deinitialized.
    unowned(unsafe) var context: ModelContext?

    init(_ context: ModelContext) {
        self.context = context
    }
}
