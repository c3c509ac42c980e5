package inspect

// CorruptedMessages lets the external tests check that a corrupted_file error says one
// of the sentences meant for people.
var CorruptedMessages = corruptedMessages
