import Foundation
import ModelKitTestSupport
import Testing

/// Saves and loads on real file systems that fail: a read-only one and a full one. Each runs a
/// small program linked with ModelKit in a private mount namespace (`unshare`), on a `tmpfs` it
/// mounts there, so nothing outside the test sees the mounts and nothing needs cleaning up.
@Suite("Real file-system errors")
struct FileSystemErrorTests {
    /// The program: `small DIR` saves one note, `large DIR` saves 20,000, `check DIR` loads the
    /// file and prints the notes' texts. Each prints `ok` or the code of the `PersistenceError`.
    static let program = """
        import Foundation
        import ModelKit

        final class Note: ModelObject<Note.Properties> {
            struct Properties: ModelProperties { var text = "" }
        }

        try ModelRegistry.register(Note.self)
        let mode = CommandLine.arguments[1]
        let file = URL(fileURLWithPath: CommandLine.arguments[2]).appendingPathComponent("notes.json")
        let context = ModelContext()
        func report(_ body: () throws -> Void) {
            do {
                try body()
                print("ok")
            } catch let error as PersistenceError {
                print(error.code)
            } catch {
                print("unexpected: \\(error)")
            }
        }
        switch mode {
        case "small":
            Note.instance(in: context).text = "kept"
            report { try context.write(to: file) }
        case "large":
            for index in 0..<20_000 { Note.instance(in: context).text = "note number \\(index)" }
            report { try context.write(to: file) }
        default:
            report { try context.load(from: file) }
            print(context.models(of: Note.self).map(\\.text))
        }
        """

    /// Builds the program and runs `script` in a new mount namespace (as root, or as the mapped
    /// root of a new user namespace), with `$PROGRAM` and `$DIR` set.
    static func run(_ script: String, program: String = program) throws -> SnippetCompiler.Outcome {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-fs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try SnippetCompiler().build(andRun: program) { program in
            let shell = "export PROGRAM='\(program.path)' DIR='\(folder.path)'; \(script)"
            return (URL(fileURLWithPath: "/usr/bin/unshare"), ["--map-root-user", "--mount", "sh", "-c", shell])
        }
    }

    @Test("A save to a read-only file system fails with readOnlyFileSystem, and the file there still loads")
    func readOnlyFileSystem() throws {
        let outcome = try Self.run(
            """
            mount -t tmpfs -o size=4m tmpfs "$DIR" && "$PROGRAM" small "$DIR" && mount -o remount,ro "$DIR" \
            && "$PROGRAM" large "$DIR" && "$PROGRAM" check "$DIR" && ls "$DIR"
            """)
        #expect(outcome.compiled, "did not compile:\n\(outcome.diagnostics)")
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(outcome.output == "ok\nreadOnlyFileSystem\nok\n[\"kept\"]\nnotes.json\n")
    }

    @Test("A save to a full file system fails with outOfSpace, leaves the old file as it was and no temporary file")
    func fullFileSystem() throws {
        let outcome = try Self.run(
            """
            mount -t tmpfs -o size=64k tmpfs "$DIR" && "$PROGRAM" small "$DIR" && "$PROGRAM" large "$DIR" \
            && "$PROGRAM" check "$DIR" && ls -A "$DIR"
            """)
        #expect(outcome.compiled, "did not compile:\n\(outcome.diagnostics)")
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(outcome.output == "ok\noutOfSpace\nok\n[\"kept\"]\nnotes.json\n")
    }
}
