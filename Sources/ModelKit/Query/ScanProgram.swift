import Foundation
import ModelKitShims

// How a query scan decides a model. The predicate's conditions become one flat list of steps, each
// a test that says which step comes next when it passes and when it fails: `&&`, `||` and `!`
// are only those jumps, decided once per run instead of by a closure per operator per model. The
// steps that read the model's properties in place run in one opening of the properties, so a
// model costs one walk over one pointer, not one opening per condition.

/// Opens a model's properties and runs the in-place steps of a scan on them.
@usableFromInline struct PropertiesOpener {
    @usableFromInline let open: (AnyObject, ScanProgram.InPlaceRun) throws -> Int
    /// The address of a model's properties: only ever a prefetch hint, asked of one model per
    /// scan (the properties are at the same offset in every model of the type).
    @usableFromInline let properties: (AnyObject) -> UnsafeRawPointer

    /// The opener of `M`'s properties. Made in inlinable code, where `M` is a concrete type, it
    /// compiles to a few loads and a direct call of the run; made in the library's generic code
    /// (for string keys), it reads the model's storage through generic metadata.
    @inlinable init<M: Model>(_ type: M.Type) {
        // Only ever given models of type `M` (the scan of `M` the opener was made for).
        open = { model, run in try unsafeDowncast(model, to: M.self).storage.box.withValuesPointer { try run.steps(on: $0) } }
        properties = { unsafeDowncast($0, to: M.self).storage.box.withValuesPointer { $0 } }
    }
}

/// A predicate compiled for a scan of the models of one type.
///
/// Not generic over the model type, so that running it looks up no generic metadata per model,
/// and its steps are plain values: an integer range, checked inline, or a test object referred
/// to unretained (the program holds the tests). Calling a closure loaded from an array retains
/// and releases its context around each call, which cost as much as the test.
@usableFromInline struct ScanProgram {
    /// A test of the properties in place (see `FieldMatcher`).
    final class FieldTest {
        let test: FieldMatcher.Test
        init(_ test: @escaping FieldMatcher.Test) { self.test = test }
    }

    /// A test of the properties in place that may follow references (looked up in the model's
    /// context) or throw.
    final class PathTest {
        let test: (UnsafeRawPointer, ModelContext?) throws -> Bool
        init(_ test: @escaping (UnsafeRawPointer, ModelContext?) throws -> Bool) { self.test = test }
    }

    /// A test of the model: run with its properties closed, since it may read them through the
    /// model, which must not overlap the opening (the law of exclusivity).
    final class ModelTest {
        let test: (AnyObject) throws -> Bool
        init(_ test: @escaping (AnyObject) throws -> Bool) { self.test = test }
    }

    /// A test as the compiler makes it.
    enum Test {
        case integers(IntegerRange)
        case text(TextEquality)
        case element(ElementMembership)
        case field(FieldTest)
        case path(PathTest)
        case model(ModelTest)
    }

    struct Step {
        /// The test, with the address of its object for the kinds that have one.
        enum Action {
            case integers(IntegerRange)
            case text(UnsafeRawPointer)
            case element(UnsafeRawPointer)
            case field(UnsafeRawPointer)
            case path(UnsafeRawPointer)
            case model(UnsafeRawPointer)
        }

        let action: Action
        /// The next step after a pass and after a failure, or ``accept`` or ``reject``.
        let pass: Int
        let fail: Int
    }

    static let accept = -1
    static let reject = -2

    private let steps: [Step]
    /// What keeps the steps' tests alive.
    private let tests: [AnyObject]
    /// The first step (``accept`` or ``reject`` for a predicate without tests).
    private let entry: Int
    private let opener: PropertiesOpener
    /// The context references are looked up in, for programs with `path` steps.
    private let lookupContext: ((AnyObject) -> ModelContext?)?

    /// The program of `node`.
    init<M: Model>(_ node: ModelPredicate<M>.Node, reader: PropertyValues<M>, indexes: [any MaintainedIndex<M>]) {
        var compiler = ScanCompiler<M>(reader: reader, indexes: indexes)
        entry = compiler.emit(node, pass: Self.accept, fail: Self.reject)
        steps = compiler.steps
        tests = compiler.tests
        opener = compiler.opener ?? PropertiesOpener(M.self)
        lookupContext = compiler.followsReferences ? { unsafeDowncast($0, to: M.self).storage.lookupContext } : nil
    }

    /// Calls `body` with the position of each of `models` the predicate holds for, in order. The
    /// models are taken unretained: the caller holds them.
    ///
    /// A scan of many models mostly waits for memory: each model lies wherever the allocator put
    /// it. So the loop asks for the properties of the model 16 places ahead before it needs them
    /// (a prefetch, which doesn't wait), their first two cache lines. A model's properties are at
    /// the same offset from its address in every model of the type, so finding them reads
    /// nothing from the model.
    func forEachMatch(in models: UnsafeBufferPointer<Unmanaged<AnyObject>>, _ body: (Int) -> Void) throws {
        guard let first = models.first else { return }
        let offset = first._withUnsafeGuaranteedRef { opener.properties($0) } - UnsafeRawPointer(first.toOpaque())
        try steps.withUnsafeBufferPointer { steps in
            let count = models.count
            for index in models.indices {
                if index + 16 < count {
                    let address = UnsafeRawPointer(models[index + 16].toOpaque()) + offset
                    modelkit_prefetch_for_reading(address)
                    modelkit_prefetch_for_reading(address + 64)
                }
                if try models[index]._withUnsafeGuaranteedRef({ try matches($0, steps) }) { body(index) }
            }
        }
    }

    /// Whether the predicate holds for `model`, a model of the type the program was made for.
    func matches(_ model: AnyObject) throws -> Bool {
        try steps.withUnsafeBufferPointer { try matches(model, $0) }
    }

    private func matches(_ model: AnyObject, _ steps: UnsafeBufferPointer<Step>) throws -> Bool {
        var at = entry
        while at >= 0 {
            let step = steps[at]
            if case .model(let test) = step.action {
                let passed = try Unmanaged<ModelTest>.fromOpaque(test)._withUnsafeGuaranteedRef { try $0.test(model) }
                at = passed ? step.pass : step.fail
                continue
            }
            at = try opener.open(model, InPlaceRun(steps: steps, start: at, context: lookupContext?(model)))
        }
        return at == Self.accept
    }

    /// The steps that read a model's properties in place, from `start` to the first that doesn't.
    @usableFromInline struct InPlaceRun {
        let steps: UnsafeBufferPointer<Step>
        let start: Int
        /// The model's context, for steps that follow references.
        let context: ModelContext?

        /// Runs the steps on the properties at `base`; returns the first step that doesn't read
        /// them, or ``accept`` or ``reject``. Not inlinable: the opener calls it directly.
        @usableFromInline func steps(on base: UnsafeRawPointer) throws -> Int {
            var at = start
            while at >= 0 {
                let step = steps[at]
                let passed: Bool
                switch step.action {
                case .integers(let range): passed = range.holds(base)
                case .text(let test):
                    passed = Unmanaged<TextEquality>.fromOpaque(test)._withUnsafeGuaranteedRef { $0.holds(base) }
                case .element(let test):
                    passed = Unmanaged<ElementMembership>.fromOpaque(test)._withUnsafeGuaranteedRef { $0.holds(base) }
                case .field(let test): passed = Unmanaged<FieldTest>.fromOpaque(test)._withUnsafeGuaranteedRef { $0.test(base) }
                case .path(let test):
                    passed = try Unmanaged<PathTest>.fromOpaque(test)._withUnsafeGuaranteedRef { try $0.test(base, context) }
                case .model: return at
                }
                at = passed ? step.pass : step.fail
            }
            return at
        }
    }
}

/// Turns a predicate tree into steps: each node is emitted with the steps to go to when it holds
/// and when it doesn't, operands last to first, so that each operand knows the step after it.
private struct ScanCompiler<M: Model> {
    let reader: PropertyValues<M>
    let indexes: [any MaintainedIndex<M>]
    var steps: [ScanProgram.Step] = []
    var tests: [AnyObject] = []
    /// The opener a key-path condition brought, made where `M` is concrete.
    var opener: PropertiesOpener?
    var followsReferences = false

    /// Emits `node`; returns its first step.
    mutating func emit(_ node: ModelPredicate<M>.Node, pass: Int, fail: Int) -> Int {
        switch node {
        case .always:
            return pass
        case .tooDeep:
            return fail  // never run: checking the predicate throws first
        case .typed(let test, _):
            return append(.model(.init { test(unsafeDowncast($0, to: M.self)) }), pass: pass, fail: fail)
        case .inPlace(let kernel, _, let open, _):
            if opener == nil { opener = open }
            return append(Self.inPlace(kernel), pass: pass, fail: fail)
        case .related(let make, _):
            let test = make()
            return append(.model(.init { try test(unsafeDowncast($0, to: M.self)) }), pass: pass, fail: fail)
        case .and(let nodes):
            // Each operand goes on to the next when it holds; any failure fails the whole.
            var next = pass
            for node in nodes.reversed() { next = emit(node, pass: next, fail: fail) }
            return next
        case .or(let nodes):
            var next = fail
            for node in nodes.reversed() { next = emit(node, pass: pass, fail: next) }
            return next
        case .not(let node):
            return emit(node, pass: fail, fail: pass)
        case .keyed(let path, let condition):
            return append(keyed(path, condition), pass: pass, fail: fail)
        }
    }

    private mutating func append(_ test: ScanProgram.Test, pass: Int, fail: Int) -> Int {
        let action: ScanProgram.Step.Action
        switch test {
        case .integers(let range): action = .integers(range)
        case .text(let test): action = .text(hold(test))
        case .element(let test): action = .element(hold(test))
        case .field(let test): action = .field(hold(test))
        case .path(let test):
            action = .path(hold(test))
            followsReferences = true
        case .model(let test): action = .model(hold(test))
        }
        steps.append(ScanProgram.Step(action: action, pass: pass, fail: fail))
        return steps.count - 1
    }

    /// Keeps `test` alive with the program; returns its address.
    private mutating func hold(_ test: AnyObject) -> UnsafeRawPointer {
        tests.append(test)
        return UnsafeRawPointer(Unmanaged.passUnretained(test).toOpaque())
    }

    private static func inPlace(_ kernel: FieldMatcher.Kernel) -> ScanProgram.Test {
        switch kernel {
        case .integers(let range): .integers(range)
        case .text(let equality): .text(equality)
        case .element(let membership): .element(membership)
        case .closure(let test): .field(.init(test))
        }
    }

    /// The test of a string-key condition: through an index on the key, or the property's place
    /// in memory, the property is read directly, without encoding the model.
    private func keyed(_ path: [String], _ condition: QueryCondition) -> ScanProgram.Test {
        let key = path.joined(separator: ".")
        let modelName = M.modelName
        if let index = indexes.first(where: { $0.key == key }) {
            return .model(
                .init { model in
                    try condition.matches(index.queryValue(of: unsafeDowncast(model, to: M.self)), key: key, modelName: modelName)
                })
        }
        let layout = PropertyLayout.of(M.self)
        if let field = layout.fields[key], let kernel = FieldMatcher.make(field, condition) {
            return Self.inPlace(kernel)
        }
        if let test = layout.matcher(for: path, condition) {  // through references
            return .path(.init(test))
        }
        if let read = layout.reader(for: path) {
            return .path(.init { base, context in try condition.matches(read(base, context), key: key, modelName: modelName) })
        }
        let reader = self.reader
        return .model(
            .init { model in
                try condition.matches(
                    reader.value(at: path, of: unsafeDowncast(model, to: M.self)), key: key, modelName: modelName)
            })
    }
}
