import Foundation

/// Compiles small programs against the ModelKit module this test run was built with, in the
/// Swift 6 language mode, so that tests can require a misuse to be a compile error and a
/// documented pattern to compile and run.
///
/// The module comes from the build folder next to the running test binary; a program that is
/// run is linked against that build's object files of ModelKit (the package has no shared
/// library product, and should not grow one for tests).
public struct SnippetCompiler {
    /// What the compiler said, and the program's output when it was run.
    public struct Outcome: Sendable {
        public var compiled: Bool
        public var diagnostics: String
        /// The program's standard output and error, when it was run.
        public var output = ""
        /// The program's exit status (or signal), when it was run.
        public var status: Int32 = 0
    }

    let buildFolder: URL
    let packageRoot: URL
    let swiftc: URL
    /// Whether the test binary runs under ThreadSanitizer: linked programs then need it too.
    let threadSanitized: Bool
    /// Whether the test binary runs under AddressSanitizer (`swift test --sanitize=address`, as
    /// CI runs it, with `MODELKIT_SANITIZER=address` set): linked programs then need it too. Its
    /// runtime is linked in statically, so it is not among the process's mapped libraries.
    let addressSanitized: Bool
    /// The package's library modules a program may import and is linked with.
    let modules: [String]

    /// - Parameter modules: The library targets to link, ModelKit's dependencies first.
    public init(modules: [String] = ["ModelKit"], filePath: String = #filePath) throws {
        self.modules = modules
        let binary = URL(
            fileURLWithPath: try String(contentsOfFile: "/proc/self/cmdline", encoding: .utf8)
                .split(separator: "\0").first.map(String.init) ?? CommandLine.arguments[0])
        buildFolder = binary.deletingLastPathComponent()
        packageRoot = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates =
            path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("swiftc") }
            + [URL(fileURLWithPath: "/opt/swift/usr/bin/swiftc")]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw SnippetError(message: "swiftc not found on PATH")
        }
        swiftc = found
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        threadSanitized = maps.contains("tsan")
        addressSanitized =
            ProcessInfo.processInfo.environment["MODELKIT_SANITIZER"] == "address"
            || dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
    }

    /// The flags that make `import ModelKit` find this build's module and its C shim.
    private var importFlags: [String] {
        [
            "-swift-version", "6",
            "-I", buildFolder.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=" + buildFolder.appendingPathComponent("ModelKitShims.build/module.modulemap").path,
            "-Xcc", "-I" + packageRoot.appendingPathComponent("Sources/ModelKitShims/include").path,
        ]
    }

    /// This build's objects of ModelKit, one per current source file (a removed file may leave
    /// a stale object behind in an incremental build).
    private func libraryObjects() throws -> [String] {
        var objects: [String] = []
        for module in modules {
            let sources = packageRoot.appendingPathComponent("Sources/\(module)")
            guard let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                objects.append(buildFolder.appendingPathComponent("\(module).build/\(file.lastPathComponent).o").path)
            }
        }
        let shims = buildFolder.appendingPathComponent("ModelKitShims.build")
        for name in try FileManager.default.contentsOfDirectory(atPath: shims.path) where name.hasSuffix(".o") {
            objects.append(shims.appendingPathComponent(name).path)
        }
        return objects
    }

    /// Type-checks `source` and runs the compiler's data-race diagnostics on it (they run after
    /// type checking, on SIL, so `-typecheck` alone would accept every misuse).
    public func check(_ source: String) throws -> Outcome {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("main.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let (status, text) = try run(swiftc, importFlags + ["-emit-sil", "-o", "/dev/null", file.path])
        return Outcome(compiled: status == 0, diagnostics: text)
    }

    /// Compiles `source` into a program linked with ModelKit and runs it; its exit status is in
    /// the outcome. `companions` are more files of the program, by name: their imports are
    /// theirs only (the program is built with MemberImportVisibility, so that not even their
    /// members reach `source`).
    public func build(
        andRun source: String, companions: [String: String] = [:], environment: [String: String] = [:]
    ) throws -> Outcome {
        try build(andRun: source, companions: companions, environment: environment) { program in (program, []) }
    }

    /// Compiles `source` like ``build(andRun:)``, and runs what `launch` makes of the program's
    /// path: an executable and its arguments (a shell that prepares a file system and runs the
    /// program in it, for example).
    public func build(
        andRun source: String, companions: [String: String] = [:], environment: [String: String] = [:],
        launch: (URL) -> (URL, [String])
    ) throws -> Outcome {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("main.swift")
        let program = folder.appendingPathComponent("program")
        try source.write(to: file, atomically: true, encoding: .utf8)
        var files = [file.path]
        for (name, text) in companions.sorted(by: { $0.key < $1.key }) {
            let companion = folder.appendingPathComponent(name)
            try text.write(to: companion, atomically: true, encoding: .utf8)
            files.append(companion.path)
        }
        let ownImports = companions.isEmpty ? [] : ["-enable-upcoming-feature", "MemberImportVisibility"]
        var flags = importFlags + ownImports + files + (try libraryObjects()) + ["-o", program.path]
        if threadSanitized { flags.append("-sanitize=thread") }
        if addressSanitized { flags.append("-sanitize=address") }
        let (status, text) = try run(swiftc, flags)
        guard status == 0 else { return Outcome(compiled: false, diagnostics: text) }
        let (executable, arguments) = launch(program)
        let (exit, output) = try run(executable, arguments, environment: environment)
        return Outcome(compiled: true, diagnostics: text, output: output, status: exit)
    }

    private func scratchFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-snippet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Runs `executable` to its end; `environment` is added to this process's.
    private func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = try ExecPipe()
        process.standardOutput = pipe.writing
        process.standardError = pipe.writing
        try process.run()
        pipe.closeWriting()
        let data = pipe.reading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

public struct SnippetError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
