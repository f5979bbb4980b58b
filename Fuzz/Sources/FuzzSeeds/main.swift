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
