import Foundation
import ModelKitTestSupport
import Testing

/// A store's saves, compactions and opens on real file systems that fail: full ones and
/// read-only ones. As in ``FileSystemErrorTests``, each runs a small program linked with ModelKit
/// in a private mount namespace, on a `tmpfs` it mounts there.
@Suite("Model store: full and read-only file systems")
struct StoreFileSystemErrorTests {
    /// The program, run as `program MODE DIR [ARGUMENT]` on the store `DIR/notes.store`. It first
    /// opens the store and prints `ok` or the code of the `PersistenceError`; each step after
    /// prints the same for its call, or the values named:
    ///
    ///     save TEXT       a note with TEXT, saved
    ///     large retry|no  20,000 notes (about 1 MB) saved; needsSaving and the number of notes; with
    ///                     `retry`, the 20,000 notes removed and a note "after" saved instead
    ///     many N          N notes of 100 characters, saved
    ///     compact TEXT    a note with TEXT, then compact(); needsSaving
    ///     hide            a save of "one"; the exit statuses of `mount -o remount,ro DIR` and of
    ///                     a read-only bind mount over DIR; a save of "two"; a note "three" and
    ///                     compact(); needsSaving
    ///     check           the number of notes and the texts of the short ones, sorted
    ///     base            check, of the base file alone loaded by a context (the store not opened)
    static let program = """
        import Foundation
        import ModelKit

        final class Note: ModelObject<Note.Properties> {
            struct Properties: ModelProperties { var text = "" }
        }

        try ModelRegistry.register(Note.self)
        let arguments = CommandLine.arguments
        let mode = arguments[1]
        let folder = arguments[2]
        let url = URL(fileURLWithPath: folder).appendingPathComponent("notes.store")
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
        func summary(_ context: ModelContext) -> String {
            let notes = context.models(of: Note.self)
            return "\\(notes.count) \\(notes.map(\\.text).filter { $0.count < 20 }.sorted())"
        }
        func shell(_ command: String) -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            process.standardError = FileHandle.nullDevice
            try? process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        if mode == "base" {
            let context = ModelContext()
            report { try context.load(from: url) }
            print(summary(context))
            exit(0)
        }
        var opened: ModelStore?
        report { opened = try ModelStore(url: url) }
        guard let store = opened else { exit(0) }
        let context = store.context
        switch mode {
        case "save":
            Note.instance(in: context).text = arguments[3]
            report { try store.save() }
        case "large":
            let notes = (0..<20_000).map { index in
                let note = Note.instance(in: context)
                note.text = "note number \\(index) of a save too large for the file system"
                return note
            }
            report { try store.save() }
            print(store.needsSaving, context.count)
            if arguments[3] == "retry" {
                for note in notes { note.removeFromContext() }
                Note.instance(in: context).text = "after"
                report { try store.save() }
            }
        case "many":
            for index in 0..<Int(arguments[3])! {
                Note.instance(in: context).text = "\\(index) " + String(repeating: "x", count: 100)
            }
            report { try store.save() }
        case "compact":
            Note.instance(in: context).text = arguments[3]
            report { try store.compact() }
            print(store.needsSaving)
        case "hide":
            Note.instance(in: context).text = "one"
            report { try store.save() }
            print(shell("mount -o remount,ro '\\(folder)'"))
            print(shell("mount --bind -o ro '\\(folder)' '\\(folder)'"))
            Note.instance(in: context).text = "two"
            report { try store.save() }
            Note.instance(in: context).text = "three"
            report { try store.compact() }
            print(store.needsSaving)
        default:
            print(summary(context))
        }
        """

    /// Builds the program and runs `script` in a new mount namespace, with `$PROGRAM` and `$DIR`
    /// set; returns its output.
    static func run(_ script: String) throws -> String {
        let outcome = try FileSystemErrorTests.run("set -e; " + script, program: program)
        #expect(outcome.compiled, "did not compile:\n\(outcome.diagnostics)")
        #expect(outcome.status == 0, "\(outcome.output)")
        return outcome.output
    }

    @Test(
        "a save on a full file system fails with outOfSpace, keeps the changes to save, and the store opens as before; a smaller save then succeeds"
    )
    func fullSave() throws {
        let output = try Self.run(
            """
            mount -t tmpfs -o size=64k tmpfs "$DIR"
            "$PROGRAM" save "$DIR" kept
            "$PROGRAM" large "$DIR" no
            "$PROGRAM" check "$DIR"
            "$PROGRAM" large "$DIR" retry
            "$PROGRAM" check "$DIR"
            ls -A "$DIR"
            """)
        #expect(
            output
                == """
                ok
                ok
                ok
                outOfSpace
                true 20001
                ok
                1 ["kept"]
                ok
                outOfSpace
                true 20001
                ok
                ok
                2 ["after", "kept"]
                notes.store
                notes.store-journal

                """)
    }

    @Test("a compaction on a full file system fails with outOfSpace after its save, and the store opens with every save")
    func fullCompaction() throws {
        let output = try Self.run(
            """
            # The journal takes about 100 KB, and so would the new base.
            mount -t tmpfs -o size=160k tmpfs "$DIR"
            "$PROGRAM" many "$DIR" 300
            "$PROGRAM" compact "$DIR" last
            "$PROGRAM" check "$DIR"
            ls -A "$DIR"
            """)
        #expect(
            output
                == """
                ok
                ok
                ok
                outOfSpace
                false
                ok
                301 ["last"]
                notes.store
                notes.store-journal

                """)
    }

    /// The base alone, read while the store cannot be opened, has what was compacted into it.
    @Test("a store cannot be opened in a read-only folder, new or saved in before, and loses nothing there")
    func readOnlyOpen() throws {
        let output = try Self.run(
            """
            mkdir "$DIR/new" "$DIR/saved"
            mount -t tmpfs -o size=1m tmpfs "$DIR/new"
            mount -o remount,ro "$DIR/new"
            "$PROGRAM" check "$DIR/new"
            ls -A "$DIR/new"
            mount -t tmpfs -o size=1m tmpfs "$DIR/saved"
            "$PROGRAM" compact "$DIR/saved" kept
            "$PROGRAM" save "$DIR/saved" later
            mount -o remount,ro "$DIR/saved"
            "$PROGRAM" check "$DIR/saved"
            "$PROGRAM" base "$DIR/saved"
            mount -o remount,rw "$DIR/saved"
            "$PROGRAM" check "$DIR/saved"
            """)
        #expect(
            output
                == """
                readOnlyFileSystem
                ok
                ok
                false
                ok
                ok
                readOnlyFileSystem
                ok
                1 ["kept"]
                ok
                2 ["kept", "later"]

                """)
    }

    /// A file system cannot be remounted read-only while a store is open on it (the kernel
    /// refuses, since the journal is open for writing), so a save never meets one; a folder can
    /// become read-only under an open store by a read-only mount over it, which the journal's
    /// open descriptor does not see, and compaction, which writes a new base in it, does.
    @Test("a compaction in a folder made read-only under the open store fails with readOnlyFileSystem, and no save is lost")
    func readOnlyCompaction() throws {
        let output = try Self.run(
            """
            mount -t tmpfs -o size=1m tmpfs "$DIR"
            "$PROGRAM" hide "$DIR"
            umount "$DIR"
            "$PROGRAM" check "$DIR"
            ls -A "$DIR"
            """)
        #expect(
            output
                == """
                ok
                ok
                32
                0
                ok
                readOnlyFileSystem
                false
                ok
                3 ["one", "three", "two"]
                notes.store
                notes.store-journal

                """)
    }
}
