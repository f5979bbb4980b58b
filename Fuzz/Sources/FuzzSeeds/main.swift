import Foundation
import FuzzSupport
import ModelKit

// Writes the seed corpus: the fuzz graph in every format, whole and as single models, into
// Corpus/<target>/ under the directory given as the first argument.
let root = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? "Fuzz/Corpus")
let context = ModelContext()
FuzzModels.makeGraph(in: context)
let author = context.models(of: FuzzAuthor.self)[0]
let everything = context.models(of: FuzzEverything.self)[0]
func write(_ data: Data, _ folder: String, _ name: String) throws {
    let directory = root.appendingPathComponent(folder)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try data.write(to: directory.appendingPathComponent(name))
}
for (format, folder) in [(PersistenceFormat.json, "json"), (.binaryPropertyList, "binary-plist"), (.xmlPropertyList, "xml")] {
    try write(try context.data(format: format), folder, "graph")
    try write(try author.persistedData(format: format), folder, "author")
    try write(try everything.persistedData(format: format), folder, "everything")
}
try write(try author.jsonData(), "model-decoders", "author.json")
try write(try everything.jsonData(), "model-decoders", "everything.json")
try write(
    try PropertyListSerialization.data(
        fromPropertyList: try author.serialize(as: .propertyList).propertyListObject, format: .xml, options: 0),
    "model-decoders", "author.plist")

// Journals of a store (FuzzOpenStore's inputs), in each format: the fuzz graph inserted, then
// changed, then a post and the author's reference to it removed, then a removal alone; and the
// JSON one cut short in its last record, as a killed save leaves it.
for (format, name) in [(PersistenceFormat.json, "saves-json"), (.binaryPropertyList, "saves-bplist")] {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-seeds-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    var options = ModelStore.Options()
    options.format = format
    let store = try ModelStore(url: folder.appendingPathComponent("seed.store"), options: options)
    FuzzModels.makeGraph(in: store.context)
    try store.save()
    let author = store.context.models(of: FuzzAuthor.self)[0]
    author.name = "Renamed"
    author.posts.first?.title = "Edited"
    try store.save()
    if let post = author.posts.last {
        author.posts.removeAll { $0 === post }
        post.removeFromContext()
    }
    try store.save()
    store.context.models(of: FuzzEverything.self)[0].removeFromContext()
    try store.save()
    store.close()
    let journal = try Data(contentsOf: store.journalURL)
    try write(journal, "store-journals", name)
    if format == .json { try write(journal.prefix(journal.count - 7), "store-journals", "torn-json") }
}
