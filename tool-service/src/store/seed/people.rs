//! Customer names and conversation lines of the demo data, in French for the
//! French locations and in English for the American ones.

pub(crate) const FRENCH_FIRST: &[&str] = &[
    "Camille", "Léa", "Manon", "Chloé", "Inès", "Jade", "Louise", "Emma", "Alice", "Juliette",
    "Lucas", "Hugo", "Louis", "Gabriel", "Arthur", "Jules", "Théo", "Nathan", "Paul", "Raphaël",
    "Sophie", "Claire", "Mathilde", "Élodie", "Antoine", "Julien", "Thomas", "Nicolas", "Maxime",
    "Céline",
];

pub(crate) const FRENCH_LAST: &[&str] = &[
    "Martin",
    "Bernard",
    "Dubois",
    "Thomas",
    "Robert",
    "Richard",
    "Petit",
    "Durand",
    "Leroy",
    "Moreau",
    "Simon",
    "Laurent",
    "Lefèvre",
    "Michel",
    "Garcia",
    "David",
    "Bertrand",
    "Roux",
    "Vincent",
    "Fournier",
    "Morel",
    "Girard",
    "André",
    "Mercier",
    "Dupont",
    "Lambert",
    "Bonnet",
    "François",
    "Martinez",
    "Legrand",
];

pub(crate) const AMERICAN_FIRST: &[&str] = &[
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "John",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Daniel",
    "Karen",
    "Olivia",
    "Ethan",
    "Sophia",
    "Mason",
    "Ava",
    "Noah",
    "Mia",
    "Liam",
    "Harper",
    "Lucas",
];

pub(crate) const AMERICAN_LAST: &[&str] = &[
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson", "Anderson",
    "Taylor", "Moore", "Jackson", "White", "Harris", "Clark", "Lewis", "Robinson", "Walker",
    "Young", "Allen", "King", "Wright", "Scott", "Hill", "Green", "Adams", "Baker", "Nelson",
    "Carter", "Mitchell",
];

/// Lines of a conversation by sender, French.
pub(crate) const FRENCH_CUSTOMER: &[&str] = &[
    "Bonjour, est-ce que ma commande est bien partie ?",
    "Pouvez-vous retirer les oignons de mon plat, s'il vous plaît ?",
    "Vous avez encore du bœuf bourguignon ce soir ?",
    "Est-il possible de réserver une table pour quatre samedi ?",
    "Je suis allergique aux fruits à coque, le velouté en contient ?",
    "Merci beaucoup, c'était délicieux !",
    "Le livreur ne trouve pas l'entrée, c'est au fond de la cour.",
    "Il manquait la mousse au chocolat dans le sac.",
    "À quelle heure fermez-vous la cuisine ?",
    "Parfait, merci pour votre réponse rapide.",
];

pub(crate) const FRENCH_STAFF: &[&str] = &[
    "Bonjour, votre commande est en préparation, elle part dans dix minutes.",
    "C'est noté, sans oignons.",
    "Désolés pour l'oubli, nous vous remboursons le dessert.",
    "La cuisine ferme à 22 h 30 en semaine.",
    "Avec plaisir, à bientôt !",
];

pub(crate) const FRENCH_ASSISTANT: &[&str] = &[
    "Bonjour ! Je transmets votre question à l'équipe du restaurant.",
    "Le velouté de châtaignes contient des noisettes torréfiées.",
    "Votre commande est prête, le livreur est en route.",
    "Je vous propose une table samedi à 20 h pour quatre personnes.",
    "Merci pour votre retour, l'équipe en sera ravie.",
];

pub(crate) const FRENCH_INSTRUCTION: &[&str] = &[
    "Proposer un dessert offert pour l'oubli.",
    "Confirmer la réservation de 20 h.",
    "Indiquer que la cuisine ferme à 22 h 30.",
];

/// Lines of a conversation by sender, English.
pub(crate) const AMERICAN_CUSTOMER: &[&str] = &[
    "Hi, is my order on its way?",
    "Could you make the burger without pickles, please?",
    "Do you still have the lobster roll tonight?",
    "Can I book a table for four on Saturday?",
    "I have a shellfish allergy, is the chowder safe?",
    "Thanks so much, everything was great!",
    "The driver can't find the entrance, it's around the back.",
    "The fries were missing from my bag.",
    "What time does the kitchen close?",
    "Perfect, thanks for the quick reply.",
];

pub(crate) const AMERICAN_STAFF: &[&str] = &[
    "Hi! Your order is being prepared and leaves in ten minutes.",
    "Got it, no pickles.",
    "Sorry about that, we refunded the fries.",
    "The kitchen closes at 10:30 pm on weeknights.",
    "You're welcome, see you soon!",
];

pub(crate) const AMERICAN_ASSISTANT: &[&str] = &[
    "Hello! I'm passing your question to the restaurant team.",
    "The clam chowder contains shellfish.",
    "Your order is ready and the driver is on the way.",
    "I can offer a table for four on Saturday at 8 pm.",
    "Thanks for the feedback, the team will love it.",
];

pub(crate) const AMERICAN_INSTRUCTION: &[&str] = &[
    "Offer a free dessert for the missing fries.",
    "Confirm the 8 pm booking.",
    "Say the kitchen closes at 10:30 pm.",
];

/// Lowercase ASCII form of a name, for e-mail addresses.
pub(crate) fn ascii_lower(name: &str) -> String {
    name.chars()
        .filter_map(|c| {
            let base = match c {
                'à' | 'â' | 'ä' | 'À' => 'a',
                'é' | 'è' | 'ê' | 'ë' | 'É' => 'e',
                'î' | 'ï' => 'i',
                'ô' | 'ö' => 'o',
                'ù' | 'û' | 'ü' => 'u',
                'ç' => 'c',
                c if c.is_ascii_alphanumeric() => c.to_ascii_lowercase(),
                _ => return None,
            };
            Some(base)
        })
        .collect()
}
