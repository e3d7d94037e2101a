package en

import "github.com/memor-db/memor/lang"

// Predicates returns memor's English predicate catalogue: the predicates
// the rule extractor emits and an LLM extractor is told, with their
// cardinality, aliases, gloss and topic words. Each call returns fresh
// values.
func Predicates() []lang.Predicate {
	rel := func(name string) lang.Predicate { return lang.Predicate{Name: name, Relation: true} }
	return []lang.Predicate{
		// One value at a time.
		{Name: "lives_in", One: true, Aliases: []string{"resides_in", "home_city", "location", "city"},
			Gloss: "lives in live living home city where reside moved"},
		{Name: "works_at", One: true, Aliases: []string{"employer", "company", "works_for"},
			Gloss: "works at work job employer company", Topic: []string{"job", "employer"}},
		{Name: "job_title", One: true, Aliases: []string{"role", "works_as", "occupation", "profession"},
			Gloss: "job title work role position profession", Topic: []string{"job"}},
		{Name: "studies_at", One: true, Aliases: []string{"school", "university", "attends"},
			Gloss: "studies at study school university college",
			Topic: []string{"school", "university", "college", "study", "studies", "student"}},
		{Name: "marital_status", One: true, Aliases: []string{"relationship_status"},
			Gloss: "marital status married single relationship", Topic: []string{"married"},
			Note: "single/married/divorced/engaged/widowed"},
		{Name: "diet", One: true, Aliases: []string{"eats"},
			Gloss: "diet eat food vegan vegetarian", Topic: []string{"diet"},
			Note: "vegan, vegetarian, pescatarian, carnivore, keto …"},
		{Name: "uses_device", One: true, Aliases: []string{"phone", "current_phone", "device"},
			Gloss: "uses device phone", Topic: []string{"phone", "device"},
			Note: `"iPhone 13", "Android"`},
		{Name: "name", One: true, Aliases: []string{"full_name", "first_name"},
			Gloss: "name called named"},
		{Name: "age", One: true, Aliases: []string{"years_old"}, Gloss: "age old years"},
		{Name: "from", One: true, Aliases: []string{"origin", "hometown", "comes_from", "is_from"},
			Gloss: "from origin hometown grew up come"},
		// A figure the subject states for a matter of theirs, one value
		// per matter (amount_grocery_budget).
		{Name: "amount_", One: true, Family: true, Aliases: []string{"quantity_", "amount_of_"},
			Note: `amount_grocery_budget, amount_reading_goal …: the figure with its rate ("$550 monthly", "12 books"); a period it holds for is the context ("april-june")`},
		// One can have only one favourite, whatever the thing.
		{Name: "favorite_", One: true, Family: true, Aliases: []string{"favourite_"},
			Note: "favorite_color, favorite_food …"},
		// Several values at once.
		{Name: "likes", Aliases: []string{"enjoys"}, Gloss: "likes like enjoy"},
		{Name: "likes_food", Gloss: "likes food like eat"},
		{Name: "dislikes", Gloss: "dislikes dislike hate"},
		{Name: "plays_instrument", Aliases: []string{"plays"}, Gloss: "plays instrument play music",
			Topic: []string{"instrument", "instruments"}},
		{Name: "has_pet", Aliases: []string{"owns_pet", "pet"}, Gloss: "has pet dog cat animal kind",
			Topic: []string{"pet", "pets", "dog", "cat"}, Note: `the kind or breed, e.g. "golden retriever"`},
		{Name: "pet_name", Gloss: "pet name called named", Note: "the pet's name"},
		{Name: "speaks_language", Aliases: []string{"speaks", "language"}, Gloss: "speaks language speak",
			Topic: []string{"language", "languages"}},
		{Name: "allergic_to", Aliases: []string{"allergy"}, Gloss: "allergic to allergy allergies",
			Topic: []string{"allergy", "allergic", "allergies"}},
		// Relations: the object is a person.
		rel("brother"), rel("sister"), rel("friend"), rel("mother"),
		rel("father"), rel("wife"), rel("husband"), rel("partner"),
		rel("son"), rel("daughter"), rel("colleague"),
	}
}

// NewCatalogue returns a catalogue holding Predicates.
func NewCatalogue() *lang.Catalogue { return lang.NewCatalogue(Predicates()...) }
