package cli

func importCommand() *command {
	return transferCommand("import", "copy a stream file (stela export) or another store into a store",
		"  stela import --from backup.jsonl                        # into the embedded store in ./.stela\n"+
			"  stela import --from backup.jsonl --to dynamo:stela      # into DynamoDB (+ $STELA_BUCKET)",
		"the source (required): a stream file or a store",
		"the destination store (default: the store stela dev uses, "+defaultStoreDoc+")", false)
}
